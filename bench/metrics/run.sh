#!/usr/bin/env bash
# What metrics cost: `weir serve` with --metrics true against the same binary with --metrics false
# (and, with ACCESS_LOG=1, a third variant: metrics plus an access log to a file), taking turns within
# every round. Server on CPU 0 with one thread, wrk on CPU 1. Two cases:
#   healthz-pipelined: GET /healthz, 16 requests per write on 16 connections (the cheapest request the
#                      node answers: what the per-request bookkeeping costs at its most visible);
#   append:            POST 256 B to one stream on 64 connections, fsync interval:100 (appends not
#                      bound by the disk; with fsync always the fdatasync hides everything else).
# Reports req/s and server CPU microseconds per request (utime+stime from /proc/PID/stat over the run /
# requests wrk completed); the summary gives medians over rounds.
#
#   bench/metrics/run.sh                   # ROUNDS=3 DURATION=10
#   ROUNDS=5 DURATION=5 ACCESS_LOG=1 bench/metrics/run.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
WEIR=${WEIR:-$root/build/release/src/app/weir}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18090}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
VARIANTS="on off"
[[ "${ACCESS_LOG:-0}" == 1 ]] && VARIANTS="on off on+log"

hz=$(getconf CLK_TCK)
tmp=$(mktemp -d /tmp/weir-metrics-bench.XXXXXX)
pid=""
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start_server() {  # variant
  local flags=(--metrics true)
  case "$1" in
    off) flags=(--metrics false) ;;
    on+log) flags=(--metrics true --access-log "$tmp/access.log") ;;
  esac
  rm -rf "$tmp/data" "$tmp/access.log"
  taskset -c "$SERVER_CPU" "$WEIR" serve --listen "127.0.0.1:$PORT" --threads 1 --data-dir "$tmp/data" \
    --fsync interval:100 --log-level warn "${flags[@]}" > "$tmp/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do
    curl -sf "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && return 0
    sleep 0.05  # polling for the listener to come up
  done
  echo "weir did not start: $(cat "$tmp/serve.log")" >&2
  exit 1
}

stop_server() {
  kill -TERM "$pid"
  wait "$pid" || true
  pid=""
}

run_case() {  # case -> prints "req/s us/req"
  local url args script_arg
  case "$1" in
    healthz-pipelined)
      url="http://127.0.0.1:$PORT/healthz"; args=(-c16 -s "$root/bench/http/pipeline.lua"); script_arg=16 ;;
    append)
      curl -sf -X PUT -H 'Content-Type: text/plain' "http://127.0.0.1:$PORT/v1/stream/bench" > /dev/null
      url="http://127.0.0.1:$PORT/v1/stream/bench"; args=(-c64 -s "$here/append.lua"); script_arg=256 ;;
  esac
  local before after out
  before=$(cpu_ticks "$pid")
  out=$(taskset -c "$CLIENT_CPU" wrk -t1 "${args[@]}" -d"${DURATION}s" "$url" -- "$script_arg" 2>&1)
  after=$(cpu_ticks "$pid")
  local reqs rps
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  if echo "$out" | grep -q "Non-2xx"; then echo "non-2xx answers in $1: $out" >&2; exit 1; fi
  awk -v r="$rps" -v n="$reqs" -v t=$((after - before)) -v hz="$hz" \
    'BEGIN { printf "%.0f %.3f\n", r, t / hz * 1e6 / n }'
}

echo "# weir metrics cost: $(date -u '+%Y-%m-%d %H:%M UTC'), $ROUNDS rounds x ${DURATION}s, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $WEIR ($("$WEIR" --version 2>/dev/null | head -1))"
results="$tmp/results"
: > "$results"
for round in $(seq 1 "$ROUNDS"); do
  for c in healthz-pipelined append; do
    for v in $VARIANTS; do
      start_server "$v"
      read -r rps us < <(run_case "$c")
      stop_server
      echo "round $round  $c  metrics=$v  $rps req/s  $us us/req"
      echo "$c $v $rps $us" >> "$results"
    done
  done
done
echo
echo "| case | variant | req/s (median) | server CPU us/req (median) |"
echo "|---|---|---|---|"
for c in healthz-pipelined append; do
  for v in $VARIANTS; do
    median() { awk -v c="$c" -v v="$v" -v f="$1" '$1 == c && $2 == v { print $f }' "$results" | sort -g |
      awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
    echo "| $c | metrics $v | $(median 3) | $(median 4) |"
  done
done
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
