#!/usr/bin/env bash
# Instructions per request of a weir-techempower build under valgrind's callgrind: a fixed number of
# h2load requests, so that two builds compare without the host's noise (callgrind counts user-space
# instructions only: no kernel, no cache misses; confirm a gain with bench/h2/ab.sh). Prints the total
# and the top functions by self count; the callgrind file stays for callgrind_annotate.
#
#   bench/h2/instructions.sh BUILD/examples/techempower/weir-techempower OUT.callgrind
#   REQUESTS=64000 STREAMS=10 bench/h2/instructions.sh ...
set -euo pipefail

bin=$1
out=$2
REQUESTS=${REQUESTS:-32000}
STREAMS=${STREAMS:-100}
CONNS=${CONNS:-16}
PORT=${PORT:-18378}
log=$(mktemp /tmp/weir-h2-cg.XXXXXX)
valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --listen "127.0.0.1:$PORT" --threads 1 >"$log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 200); do
  curl -sf --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$PORT/plaintext" && break
  sleep 0.1  # valgrind starts slowly
done
h2load -t1 -c"$CONNS" -m"$STREAMS" -n"$REQUESTS" "http://127.0.0.1:$PORT/plaintext" | grep -E '^requests:'
kill -TERM "$pid"
wait "$pid" || true
total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
echo "instructions: $total total, $((total / REQUESTS)) per request (start-up included)"
callgrind_annotate "$out" 2>/dev/null | sed -n '/^Ir/,$p' | sed -n '3,25p' | cut -c1-160
