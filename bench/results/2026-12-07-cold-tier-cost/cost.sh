#!/usr/bin/env bash
# The tiered node's own CPU per MiB appended against the untiered node's, for several builds in
# alternating rounds (bench/results/2026-12-07-cold-tier-cost/notes.md).
# Usage: cost.sh OUT_DIR ROUNDS MIB NAME=WEIR_BINARY...
# Each round, for each build (order alternating between rounds): s3rver pinned to CPU 1, two nodes of
# that build pinned to CPU 0 (one without a tier, one with --cold on s3rver keeping 8 MiB, as in
# bench/cold/run.sh); MIB MiB appended to each in 64 KiB appends (the client on CPU 1), then the wait
# until the tiered node has every byte in the bucket; utime+stime of each weir process from
# /proc/PID/stat over that span (the append and the upload), and s3rver's.
set -euo pipefail
out="$1" rounds="$2" mib="$3"
shift 3
root="$(cd "$(dirname "$0")/../../.." && pwd)"
mkdir -p "$out"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/weir-cold-cost.XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
. "$root/tests/integration/s3/s3rver.sh"
tck="$(getconf CLK_TCK)"
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
metric() { curl -fsS "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }
python3 -c "
import sys
for i in range($mib * 16):
    sys.stdout.write(('%08d' % i) * 8191 + 'x' * 7 + '\n')
" >"$tmp/data"

start_node() {  # BIN NAME PORT [flags...]
  local bin="$1" name="$2" port="$3"
  shift 3
  AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER taskset -c 0 "$bin" serve --listen "127.0.0.1:$port" \
    --data-dir "$tmp/$name" --threads 1 --hot-bytes 4194304 "$@" >"$tmp/$name.log" 2>&1 &
  pids+=($!)
  last_pid=$!
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  cat "$tmp/$name.log" >&2
  return 1
}
stop_pid() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

one() {  # ROUND NAME BIN
  local round="$1" name="$2" bin="$3"
  rm -rf "$tmp/s3" "$tmp/local" "$tmp/tiered"
  s3rver_start "$tmp/s3" bench
  pids+=("$S3RVER_PID")
  taskset -a -cp 1 "$S3RVER_PID" >/dev/null
  start_node "$bin" local 5211
  local lp="$last_pid"
  start_node "$bin" tiered 5212 --cold s3://bench/node --s3-endpoint "http://127.0.0.1:$S3RVER_PORT" \
    --local-bytes 1073741824 --cold-keep-bytes 8388608 --cold-max-age-ms 1000
  local tp="$last_pid"
  local l0 t0 s0 l1 t1 s1 w0 w1 wl wt
  l0="$(cpu_ticks "$lp")" t0="$(cpu_ticks "$tp")" s0="$(cpu_ticks "$S3RVER_PID")"
  for port in 5211 5212; do
    taskset -c 1 "$bin" stream --server "http://127.0.0.1:$port" create big --content-type application/octet-stream >/dev/null
  done
  w0="$(date +%s.%N)"
  taskset -c 1 "$bin" stream --server http://127.0.0.1:5211 append big --lines --content-type application/octet-stream <"$tmp/data" >/dev/null
  w1="$(date +%s.%N)"; wl="$(echo "$w1 - $w0" | bc -l)"
  l1="$(cpu_ticks "$lp")"
  w0="$(date +%s.%N)"
  taskset -c 1 "$bin" stream --server http://127.0.0.1:5212 append big --lines --content-type application/octet-stream <"$tmp/data" >/dev/null
  w1="$(date +%s.%N)"; wt="$(echo "$w1 - $w0" | bc -l)"
  local want=$((mib << 20)) up=0
  for _ in $(seq 1 1200); do
    up="$(metric 5212 weir_tier_uploaded_bytes_total)"
    [ "${up:-0}" -ge "$want" ] && break
    sleep 0.1
  done
  w1="$(date +%s.%N)"; local wu; wu="$(echo "$w1 - $w0" | bc -l)"
  t1="$(cpu_ticks "$tp")" s1="$(cpu_ticks "$S3RVER_PID")"
  local dropped; dropped="$(metric 5212 weir_tier_dropped_bytes_total)"
  printf '%s %s %s %.2f %.2f %.3f %.3f %.2f %.2f %.2f %s %s\n' "$round" "$name" "$mib" \
    "$(echo "($l1 - $l0) / $tck" | bc -l)" "$(echo "($t1 - $t0) / $tck" | bc -l)" \
    "$(echo "($l1 - $l0) / $tck / $mib * 1000" | bc -l)" "$(echo "($t1 - $t0) / $tck / $mib * 1000" | bc -l)" \
    "$wl" "$wt" "$wu" "${up:-0}" "${dropped:-0}"
  stop_pid "$tp"; stop_pid "$lp"; s3rver_stop
}

echo "round build MiB local_cpu_s tiered_cpu_s local_ms_per_MiB tiered_ms_per_MiB local_append_s tiered_append_s tiered_until_uploaded_s uploaded_bytes dropped_bytes" | tee -a "$out/cost.txt"
builds=("$@")
for round in $(seq 1 "$rounds"); do
  order=("${builds[@]}")
  if [ $((round % 2)) -eq 0 ]; then order=(); for ((i=${#builds[@]}-1; i>=0; i--)); do order+=("${builds[$i]}"); done; fi
  for b in "${order[@]}"; do one "$round" "${b%%=*}" "${b#*=}" | tee -a "$out/cost.txt"; done
done
