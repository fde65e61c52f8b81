#!/usr/bin/env bash
# The cold tier measured against local disk, in one run on one machine (docs/benchmarks.md, "Cold tier"):
#   1. catch-up reads: the same 64 MiB stream read from the start on a node without a tier (local
#      segments) and on a node whose bytes were moved to the bucket and dropped from its disk (s3rver on
#      loopback): MiB/s and requests to the bucket per MiB;
#   2. appends with the tier on against off: `weir bench --workloads seed` (small events, append
#      latency) at 64 writers against both nodes while the tiered one uploads.
# Usage: bench/cold/run.sh WEIR_BINARY [OUT_DIR]   (a release build: cmake --preset release)
set -euo pipefail
weir="$(realpath "$1")"
out="${2:-bench/results/$(date -u +%Y-%m-%d)-cold-tier}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$out"
. "$root/bench/cold/scratch.sh" cold-bench
s3_pid="$S3RVER_PID"
s3_port="$S3RVER_PORT"

declare -A node_pid
start_node() {  # NAME PORT [flags...]
  local name="$1" port="$2"
  shift 2
  AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER "$weir" serve --listen "127.0.0.1:$port" \
    --data-dir "$tmp/$name" --threads 1 --hot-bytes 4194304 "$@" >"$tmp/$name.log" 2>&1 &
  pids+=($!)
  node_pid[$name]=$!
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  cat "$tmp/$name.log" >&2
  return 1
}
start_node local 5201
start_node tiered 5202 --cold s3://bench/node --s3-endpoint "http://127.0.0.1:$s3_port" \
  --local-bytes 1073741824 --cold-keep-bytes 8388608 --cold-max-age-ms 1000

# 64 MiB in 64 KiB appends (one per line of the file).
python3 -c "
import sys
for i in range(1024):
    sys.stdout.write(('%08d' % i) * 8191 + 'x' * 7 + '\n')
" >"$tmp/data"
for port in 5201 5202; do
  "$weir" stream --server "http://127.0.0.1:$port" create big --content-type application/octet-stream >/dev/null
  "$weir" stream --server "http://127.0.0.1:$port" append big --lines --content-type application/octet-stream \
    <"$tmp/data" >/dev/null
done
# Wait until the tiered node dropped all but its keep share.
for _ in $(seq 1 600); do
  dropped="$(metric 5202 weir_tier_dropped_bytes_total)"
  [ "${dropped:-0}" -ge $((56 << 20)) ] && break
  sleep 0.5
done
echo "tiered node: $(metric 5202 weir_tier_uploaded_bytes_total) bytes uploaded, ${dropped:-0} dropped" | tee "$out/cold.txt"

read_once() {  # PORT -> "seconds bytes"
  local t0 t1
  t0="$(date +%s.%N)"
  local n
  n="$("$weir" stream --server "http://127.0.0.1:$1" read big | wc -c)"
  t1="$(date +%s.%N)"
  echo "$(echo "$t1 - $t0" | bc -l) $n"
}
{
  echo "round node seconds bytes MiB/s bucket_reads"
  for round in 1 2 3; do
    for port in 5201 5202; do
      before="$(metric "$port" weir_tier_bucket_reads_total)"
      read -r secs bytes <<<"$(read_once "$port")"
      after="$(metric "$port" weir_tier_bucket_reads_total)"
      name=local
      [ "$port" = 5202 ] && name=tiered
      echo "$round $name $secs $bytes $(echo "$bytes / 1048576 / $secs" | bc -l | cut -c1-6) $(( ${after:-0} - ${before:-0} ))"
    done
  done
} | tee -a "$out/cold.txt"

# Appends with the tier on against off, same run; the servers' CPU from /proc (weir bench), and the S3
# server's over the whole run (it shares the machine: its CPU is not the node's).
s3_before="$(cpu_ticks "$s3_pid")"
"$weir" bench --target local=http://127.0.0.1:5201/v1/stream --target tiered=http://127.0.0.1:5202/v1/stream \
  --server-pid "local=${node_pid[local]}" --server-pid "tiered=${node_pid[tiered]}" \
  --workloads seed --concurrency 64 --throughput-secs 8 --settle-secs 5 --out "$out" | tail -40 | tee "$out/seed.txt"
echo "s3rver CPU over the seed runs: $(( ($(cpu_ticks "$s3_pid") - s3_before) / $(getconf CLK_TCK) )) s" | tee -a "$out/seed.txt"
