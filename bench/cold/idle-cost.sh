#!/usr/bin/env bash
# What a tiered node costs while nothing happens, against the same build without a tier, for several
# builds in one run (docs/benchmarks.md, "Cold tier: a node at rest"). For each build: two nodes pinned
# to CPU 0 (one with --cold on s3rver, pinned to CPU 1), STREAMS streams created on each with one
# 64-byte append, the wait until the tiered node has every byte in the bucket and 10 s more (the
# checkpoint and the restore snapshot that follow), then each node's CPU (utime + stime from /proc) over
# SECS seconds of rest: what the tier's periodic work costs with that many streams.
# Usage: bench/cold/idle-cost.sh OUT_DIR STREAMS SECS NAME=WEIR_BINARY...
set -euo pipefail
out="$1" streams="$2" secs="$3"
shift 3
root="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$out"
. "$root/bench/cold/scratch.sh" cold-idle
taskset -a -cp 1 "$S3RVER_PID" >/dev/null
echo "build streams secs local_cpu_ms_per_s tiered_cpu_ms_per_s tiered_uploaded_bytes" | tee "$out/idle.txt"
for build in "$@"; do
  name="${build%%=*}" bin="${build#*=}"
  rm -rf "$tmp/local" "$tmp/tiered"
  start_node "$bin" local 5231
  start_node "$bin" tiered 5232 --cold "s3://bench/$name" --s3-endpoint "http://127.0.0.1:$S3RVER_PORT" \
    --local-bytes 1073741824 --cold-max-age-ms 1000
  for port in 5231 5232; do taskset -c 1 python3 "$root/bench/cold/create.py" "127.0.0.1:$port" "$streams" 64; done
  wait_uploaded 5232 $((streams * 64))
  sleep 10  # the checkpoint and the restore snapshot that follow the creates
  l0="$(cpu_ticks "${node_pid[local]}")" t0="$(cpu_ticks "${node_pid[tiered]}")"
  sleep "$secs"
  l1="$(cpu_ticks "${node_pid[local]}")" t1="$(cpu_ticks "${node_pid[tiered]}")"
  printf '%s %s %s %.1f %.1f %s\n' "$name" "$streams" "$secs" \
    "$(echo "($l1 - $l0) * 1000 / $tck / $secs" | bc -l)" "$(echo "($t1 - $t0) * 1000 / $tck / $secs" | bc -l)" \
    "$(metric 5232 weir_tier_uploaded_bytes_total)" | tee -a "$out/idle.txt"
  stop_node local
  stop_node tiered
done
