#!/usr/bin/env bash
# Interleaved A/B of HTTP/2 servers: each round runs every binary (or `h2o`) once, in turn, under the same
# h2load command, so that they meet the same machine conditions; prints server CPU microseconds per
# request for each (utime+stime from /proc over the h2load run / requests done). On a shared, noisy host
# only ratios within one round mean much; compare medians over several rounds.
#
#   bench/h2/ab.sh OLD_TECHEMPOWER NEW_TECHEMPOWER [h2o]         # 5 rounds, 5 s, 16 connections x 100
#   ROUNDS=8 DURATION=4 STREAMS=10 bench/h2/ab.sh /tmp/a /tmp/b
#
# A binary is anything that takes weir-techempower's `--listen HOST:PORT --threads 1` and answers
# /plaintext. Server on CPU 0, h2load -t1 on CPU 1.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
STREAMS=${STREAMS:-100}
CONNS=${CONNS:-16}
PORT=${PORT:-18377}
hz=$(getconf CLK_TCK)
tmp=$(mktemp -d /tmp/weir-h2-ab.XXXXXX)
pid=""
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

ticks() {  # utime+stime of a process and its children
  local total=0 p
  for p in "$1" $(pgrep -P "$1" || true); do
    [[ -r /proc/$p/stat ]] && total=$((total + $(sed 's/^.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')))
  done
  echo "$total"
}

echo "# h2load -t1 -c$CONNS -m$STREAMS -D$DURATION, $ROUNDS rounds, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  line="round $r:"
  for b in "$@"; do
    if [[ "$b" == h2o ]]; then
      mkdir -p "$tmp/h2o" && printf 'Hello, World!' >"$tmp/h2o/plaintext.txt"
      sed -e "s|@PREFIX@|$tmp/h2o|g" -e "s|@PORT@|$PORT|g" -e "s|@USER@|$(id -un)|g" "$here/h2o.conf.in" \
        >"$tmp/h2o/h2o.conf"
      taskset -c 0 h2o -c "$tmp/h2o/h2o.conf" >"$tmp/server.log" 2>&1 &
    else
      taskset -c 0 "$b" --listen "127.0.0.1:$PORT" --threads 1 >"$tmp/server.log" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 1 200); do
      curl -sf --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$PORT/plaintext" && break
      sleep 0.05  # polling for the listener to come up
    done
    t0=$(ticks "$pid")
    taskset -c 1 h2load -t1 -c"$CONNS" -m"$STREAMS" -D"$DURATION" "http://127.0.0.1:$PORT/plaintext" >"$tmp/out" 2>&1
    t1=$(ticks "$pid")
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    pid=""
    n=$(awk '/^requests:/ {print $6}' "$tmp/out")
    line="$line $(basename "$b")=$(awk -v t=$((t1 - t0)) -v hz="$hz" -v n="$n" 'BEGIN {printf "%.3f", n ? t * 1e6 / hz / n : 0}')"
  done
  echo "$line"
done
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
