#!/usr/bin/env bash
# A node that holds far more than its disk budget (docs/benchmarks.md, "Cold tier: a node larger than its
# disk"): GIB GiB appended in 1 MiB appends over 16 streams to a node with --local-bytes 1 GiB and a cold
# tier on s3rver (loopback). Sampled every second: the data directory's bytes on disk and the node's
# resident memory. Then the node is killed (-9), its data directory removed, and a new node restores from
# the bucket (--restore): time to ready and snapshot bytes fetched; one stream is read back in full from
# the restored node and compared with what was written.
# Usage: bench/cold/large.sh WEIR_BINARY [GIB] [OUT_DIR]   (a release build)
set -euo pipefail
weir="$(realpath "$1")"
gib="${2:-10}"
out="${3:-bench/results/$(date -u +%Y-%m-%d)-cold-large}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$out"
. "$root/bench/cold/scratch.sh" cold-large
s3_port="$S3RVER_PORT"

budget=$((1 << 30))
segment=$((64 << 20))
flags=(--threads 2 --cold s3://bench/large --s3-endpoint "http://127.0.0.1:$s3_port" --local-bytes "$budget"
  --segment-bytes "$segment" --cold-snapshot-interval-ms 10000)
start_node() {  # DATA_DIR LOG [flags...] -> node_pid
  local data="$1" log="$2"
  shift 2
  AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER "$weir" serve --listen 127.0.0.1:5301 \
    --data-dir "$data" "${flags[@]}" "$@" >"$log" 2>&1 &
  node_pid=$!
  pids+=("$node_pid")
  for _ in $(seq 1 600); do curl -fsS http://127.0.0.1:5301/healthz >/dev/null 2>&1 && return 0; sleep 0.1; done
  cat "$log" >&2
  return 1
}
metric() {  # NAME
  curl -fsS http://127.0.0.1:5301/metrics | awk -v n="$1" '$1 == n { print $2 }'
}

start_node "$tmp/data" "$tmp/node.log"
# Samples: seconds, bytes of the data directory, RSS KiB, bytes not yet in the bucket.
(
  t0=$(date +%s)
  while kill -0 "$node_pid" 2>/dev/null; do
    echo "$(($(date +%s) - t0)) $(du -sb "$tmp/data" | cut -f1) $(awk '/VmRSS/ {print $2}' /proc/$node_pid/status) $(metric weir_tier_local_bytes)"
    sleep 1
  done
) >"$out/samples.txt" 2>/dev/null &
sampler=$!

began=$(date +%s.%N)
python3 "$root/bench/cold/fill.py" write 127.0.0.1:5301 "$gib" 16 >"$out/fill.txt"
wrote=$(date +%s.%N)
# Wait for the bucket to hold everything and for a restore snapshot taken after the last write.
last_write=$(date +%s)
for _ in $(seq 1 1200); do
  lb="$(metric weir_tier_local_bytes)"
  rp="$(metric weir_tier_restore_point_timestamp_seconds)"
  if [ "${lb:-1}" = 0 ] && awk -v r="${rp:-0}" -v w="$last_write" 'BEGIN { exit !(r >= w) }'; then break; fi
  sleep 1
done
curl -fsS http://127.0.0.1:5301/metrics | grep '^weir_tier_' >"$out/metrics-before-loss.txt"
kill "$sampler" 2>/dev/null || true
max_disk=$(awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }' "$out/samples.txt")
max_rss=$(awk 'BEGIN { m = 0 } $3 > m { m = $3 } END { print m }' "$out/samples.txt")
bucket_bytes=$(du -sb "$tmp/s3" | cut -f1)

kill -9 "$node_pid"
wait "$node_pid" 2>/dev/null || true
rm -rf "$tmp/data"
r0=$(date +%s.%N)
start_node "$tmp/restored" "$tmp/restored.log" --restore true
r1=$(date +%s.%N)
grep -E 'restore|recovered' "$tmp/restored.log" >"$out/restore-log.txt" || true
python3 "$root/bench/cold/fill.py" verify 127.0.0.1:5301 "$gib" 16 3 >"$out/verify.txt"
rss_restored=$(awk '/VmRSS/ {print $2}' /proc/$node_pid/status)

{
  echo "# A node larger than its disk: $gib GiB through --local-bytes 1 GiB ($(date -u +%FT%TZ))"
  echo
  echo "- appended: $(cat "$out/fill.txt") in $(awk -v a="$began" -v b="$wrote" 'BEGIN { printf "%.1f", b - a }') s"
  echo "- data directory at most $max_disk bytes (budget $budget + one segment $segment = $((budget + segment)))"
  echo "- node RSS at most $max_rss KiB; bucket (s3rver files) $bucket_bytes bytes"
  echo "- restore: ready $(awk -v a="$r0" -v b="$r1" 'BEGIN { printf "%.2f", b - a }') s after start; $(grep -o '[0-9]* snapshot bytes in [0-9.]* s' "$out/restore-log.txt")"
  echo "- restored node RSS $rss_restored KiB after reading back: $(cat "$out/verify.txt")"
} | tee "$out/results.md"
