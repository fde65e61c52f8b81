#!/usr/bin/env bash
# What a tiered node that must forget what it uploaded costs with many streams at rest beside a writer,
# for several builds in one run (docs/benchmarks.md, "Cold tier: a node at rest"). For each build: a node
# with --cold on s3rver (pinned to CPU 1) keeping 8 MiB, pinned to CPU 0; STREAMS streams created with
# one 64-byte append each and all in the bucket; then MIB MiB appended to one more stream in 64 KiB
# appends (the client on CPU 1), and the wait until they are in the bucket. The node's CPU over that
# span (utime + stime from /proc), per MiB, and the bytes it forgot (weir_tier_dropped_bytes_total).
# Usage: bench/cold/reclaim-cost.sh OUT_DIR STREAMS MIB NAME=WEIR_BINARY...
set -euo pipefail
out="$1" streams="$2" mib="$3"
shift 3
root="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$out"
. "$root/bench/cold/scratch.sh" cold-reclaim
taskset -a -cp 1 "$S3RVER_PID" >/dev/null
python3 -c "
import sys
for i in range($mib * 16):
    sys.stdout.write(('%08d' % i) * 8191 + 'x' * 7 + '\n')
" >"$tmp/data"
echo "build streams mib cpu_s cpu_ms_per_mib secs dropped_bytes" | tee "$out/reclaim.txt"
for build in "$@"; do
  name="${build%%=*}" bin="${build#*=}"
  rm -rf "$tmp/tiered"
  start_node "$bin" tiered 5251 --cold "s3://bench/$name" --s3-endpoint "http://127.0.0.1:$S3RVER_PORT" \
    --local-bytes 1073741824 --cold-keep-bytes 8388608 --cold-max-age-ms 1000
  taskset -c 1 python3 "$root/bench/cold/create.py" 127.0.0.1:5251 "$streams" 64
  wait_uploaded 5251 $((streams * 64))
  sleep 10  # the checkpoint and the restore snapshot that follow the creates
  taskset -c 1 "$bin" stream --server http://127.0.0.1:5251 create big --content-type application/octet-stream >/dev/null
  c0="$(cpu_ticks "${node_pid[tiered]}")" w0="$(date +%s.%N)"
  taskset -c 1 "$bin" stream --server http://127.0.0.1:5251 append big --lines \
    --content-type application/octet-stream <"$tmp/data" >/dev/null
  wait_uploaded 5251 $((streams * 64 + (mib << 20)))
  c1="$(cpu_ticks "${node_pid[tiered]}")" w1="$(date +%s.%N)"
  printf '%s %s %s %.2f %.2f %.1f %s\n' "$name" "$streams" "$mib" "$(echo "($c1 - $c0) / $tck" | bc -l)" \
    "$(echo "($c1 - $c0) * 1000 / $tck / $mib" | bc -l)" "$(echo "$w1 - $w0" | bc -l)" \
    "$(metric 5251 weir_tier_dropped_bytes_total)" | tee -a "$out/reclaim.txt"
  stop_node tiered
done
