#!/usr/bin/env bash
# User-space instructions per pipelined GET /healthz, by function, under callgrind: a figure that the
# load of a shared host does not move (this VM has no hardware counters for `perf stat`). Counters are
# zeroed after start-up and a 2 s warm-up, then wrk runs 4 s (16 requests per write, 4 connections).
# Compare two binaries (e.g. before and after a change to the engine) function by function:
#
#   bench/tls/engine_instructions.sh BINARY [PORT]
#
# Prints the request count, the total and the per-request figure of the engine's connection functions.
set -euo pipefail
bin=$1
port=${2:-18111}
root=$(cd "$(dirname "$0")/../.." && pwd)
d=$(mktemp -d /tmp/weir-ir.XXXXXX)
pid=""
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -rf "$d"
}
trap cleanup EXIT
valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" "$bin" serve --listen "127.0.0.1:$port" --threads 1 \
  --durable false --data-dir "$d/data" --log-level warn > "$d/log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/healthz" > /dev/null 2>&1 && break
  sleep 0.1  # polling for the listener to come up (valgrind starts slowly)
done
load() { wrk -t1 -c4 -d"$1" -s "$root/bench/http/pipeline.lua" "http://127.0.0.1:$port/healthz" -- 16 2>&1; }
load 2s > /dev/null
callgrind_control -z "$pid" > /dev/null
reqs=$(load 4s | awk '/requests in/ {print $1}')
callgrind_control -d "$pid" > /dev/null
kill -TERM "$pid"
wait "$pid" || true
pid=""
dump=$(ls "$d"/cg.out.* | head -1)
echo "$bin: $reqs requests"
callgrind_annotate --threshold=100 "$dump" 2>/dev/null |
  grep -E "PROGRAM TOTALS|weir::http::|weir::server::|syscall.S:syscall" | sed 's/ \[.*//' |
  awk -v n="$reqs" '{ v = $1; gsub(",", "", v); printf "%9.1f Ir/req  %s\n", v / n, $0 }' | cut -c1-160 | head -30
