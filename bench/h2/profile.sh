#!/usr/bin/env bash
# Where an h2c request's CPU goes: one server (weir = weir-techempower, or h2o / nginx for comparison)
# pinned to CPU 0 with one thread, h2load -t1 on CPU 1 driving /plaintext at STREAMS streams per
# connection over CONNS connections, and `perf record` (cpu-clock: this VM has no hardware counters) on
# the server for the middle of the run. Prints the top symbols of the server (self time), by DSO, and,
# with CALLGRAPH=dwarf, the callers of the allocator.
#
#   bench/h2/profile.sh                      # weir, 16 connections x 100 streams, 10 s
#   SERVER=h2o STREAMS=10 bench/h2/profile.sh
#   CALLGRAPH=dwarf TOP=60 bench/h2/profile.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
WEIR_TE=${WEIR_TE:-$root/build/release/examples/techempower/weir-techempower}
SERVER=${SERVER:-weir}
CONNS=${CONNS:-16}
STREAMS=${STREAMS:-100}
DURATION=${DURATION:-10}
TOP=${TOP:-40}
CALLGRAPH=${CALLGRAPH:-}
PORT=${PORT:-18290}

tmp=$(mktemp -d /tmp/weir-h2-profile.XXXXXX)
server_pid=""
load_pid=""
cleanup() {
  for p in "$load_pid" "$server_pid"; do
    if [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null; then
      kill -TERM "$p" 2>/dev/null || true
      wait "$p" 2>/dev/null || true
    fi
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

case "$SERVER" in
  weir)
    taskset -c 0 "$WEIR_TE" --listen "127.0.0.1:$PORT" --threads 1 >"$tmp/server.log" 2>&1 &
    server_pid=$!
    ;;
  h2o)
    mkdir -p "$tmp/h2o" && printf 'Hello, World!' >"$tmp/h2o/plaintext.txt"
    sed -e "s|@PREFIX@|$tmp/h2o|g" -e "s|@PORT@|$PORT|g" -e "s|@USER@|$(id -un)|g" "$here/h2o.conf.in" \
      >"$tmp/h2o/h2o.conf"
    taskset -c 0 h2o -c "$tmp/h2o/h2o.conf" >"$tmp/server.log" 2>&1 &
    server_pid=$!
    ;;
  nginx)
    mkdir -p "$tmp/nginx"
    sed -e "s|@PREFIX@|$tmp/nginx|g" -e "s|@PORT@|$PORT|g" "$here/nginx.conf.in" >"$tmp/nginx/nginx.conf"
    taskset -c 0 nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" &
    server_pid=$!
    ;;
  *) echo "SERVER is weir, h2o or nginx" >&2; exit 2 ;;
esac
for _ in $(seq 1 200); do
  curl -sf --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$PORT/plaintext" && break
  sleep 0.05  # polling for the listener to come up
done
# nginx serves from its worker, h2o from its one process.
target=$server_pid
if [[ "$SERVER" == nginx ]]; then target=$(pgrep -P "$server_pid" | head -1); fi

taskset -c 1 h2load -t1 -c"$CONNS" -m"$STREAMS" -D"$DURATION" "http://127.0.0.1:$PORT/plaintext" >"$tmp/h2load.out" 2>&1 &
load_pid=$!
sleep 1
cg=()
[[ -n "$CALLGRAPH" ]] && cg=(--call-graph "$CALLGRAPH")
perf record -q -e cpu-clock -F 2000 "${cg[@]}" -p "$target" -o "$tmp/perf.data" -- sleep $((DURATION - 2)) 2>/dev/null
wait "$load_pid" || true
load_pid=""
grep -E '^(finished|requests:)' "$tmp/h2load.out"
echo
echo "## $SERVER, $CONNS connections x $STREAMS streams: by DSO"
perf report -i "$tmp/perf.data" --no-children --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -10
echo
echo "## top $TOP symbols (self)"
perf report -i "$tmp/perf.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null | grep -E '^ +[0-9]' |
  head -"$TOP"
if [[ -n "$CALLGRAPH" ]]; then
  echo
  echo "## callers of malloc/free (caller graph)"
  perf report -i "$tmp/perf.data" --no-children --stdio -S malloc,free,_int_malloc,_int_free,cfree \
    -G 2>/dev/null | grep -v '^$' | head -150
fi
