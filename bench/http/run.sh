#!/usr/bin/env bash
# HTTP engine benchmark: weir-techempower against nginx answering the same paths, and the machine's
# floor (bench/http/floor_server.cc: no parsing, one fixed answer per request head) beside them.
# Server pinned to CPU 0 with one thread (nginx: one worker on CPU 0), wrk pinned to CPU 1 with one
# thread. Reports req/s, server CPU microseconds per request (utime+stime of every server process from
# /proc/PID/stat over the run / requests served), p99 latency for non-pipelined runs (stock wrk shows
# p99 = 0 when pipelining, so none is quoted there) and the idle keep-alive connection memory cost.
#
# The servers take turns within each case (and each round), so that they meet the same machine
# conditions; the summary gives the median over rounds. The floor answers plaintext cases only.
#
#   bench/http/run.sh                      # weir, nginx and the epoll floor, 10 s per case, 1 round
#   ROUNDS=3 DURATION=5 bench/http/run.sh
#   SERVERS="weir floor floor-uring" CASES="plaintext-pipelined-16x256 256 /plaintext 16" bench/http/run.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
WEIR_BIN=${WEIR_BIN:-$root/build/release/examples/techempower/weir-techempower}
FLOOR_BIN=${FLOOR_BIN:-$root/build/release/bench/http/weir-http-floor}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-1}
SERVERS=${SERVERS:-"weir nginx floor"}
PORT=${PORT:-18080}
IDLE_CONNS=${IDLE_CONNS:-2000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
# name connections path pipeline-depth
CASES=${CASES:-"plaintext-pipelined-16x256 256 /plaintext 16
plaintext-pipelined-16x16 16 /plaintext 16
plaintext-256 256 /plaintext 1
json-256 256 /json 1"}

hz=$(getconf CLK_TCK)
tmp=$(mktemp -d /tmp/weir-http-bench.XXXXXX)
server_pid=""

cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

for server in $SERVERS; do
  case "$server" in
    weir) bin=$WEIR_BIN ;;
    floor | floor-uring) bin=$FLOOR_BIN ;;
    nginx) bin=$(command -v nginx || echo nginx) ;;
    *) echo "unknown server '$server' (weir, nginx, floor, floor-uring)" >&2; exit 2 ;;
  esac
  if [[ ! -x "$bin" ]]; then
    echo "$server: $bin is missing; build it (cmake --build build/release --target weir-techempower" \
      "weir-http-floor) or install nginx-light" >&2
    exit 2
  fi
done

# utime+stime (clock ticks) of a process and its children processes (nginx workers).
cpu_ticks() {
  local total=0 p
  for p in "$1" $(pgrep -P "$1" || true); do
    if [[ -r /proc/$p/stat ]]; then
      # Fields after the ")" of comm: utime is field 14, stime 15 of the full line.
      local t
      t=$(sed 's/^.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')
      total=$((total + t))
    fi
  done
  echo "$total"
}

wait_port() {
  for _ in $(seq 1 100); do
    if curl -s -o /dev/null "http://127.0.0.1:$PORT/plaintext"; then return 0; fi
    sleep 0.05
  done
  echo "server did not come up on port $PORT" >&2
  return 1
}

start_server() {
  # Another listener on the port (SO_REUSEPORT, same user) would silently take half the connections and
  # halve the measured CPU per request.
  if ss -Hltn "sport = :$PORT" | grep -q .; then
    echo "port $PORT is already in use; set PORT=" >&2
    exit 1
  fi
  case "$1" in
    weir)
      taskset -c "$SERVER_CPU" "$WEIR_BIN" --listen "127.0.0.1:$PORT" --threads 1 2>"$tmp/weir.log" &
      server_pid=$!
      ;;
    floor | floor-uring)
      local mode=epoll
      [[ "$1" == floor-uring ]] && mode=uring
      taskset -c "$SERVER_CPU" "$FLOOR_BIN" --listen "127.0.0.1:$PORT" --mode "$mode" 2>"$tmp/floor.log" &
      server_pid=$!
      ;;
    nginx)
      mkdir -p "$tmp/nginx"
      sed -e "s|@PREFIX@|$tmp/nginx|g" -e "s|@PORT@|$PORT|g" "$here/nginx.conf.in" >"$tmp/nginx/nginx.conf"
      taskset -c "$SERVER_CPU" nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" &
      server_pid=$!
      ;;
  esac
  wait_port
}

stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid" || true
  server_pid=""
}

to_us() {  # wrk latency ("812.00us", "1.23ms", "2.01s") -> microseconds
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else if (v ~ /s$/) print n * 1000000; else print n }'
}

echo "# weir HTTP engine benchmark ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "# server on CPU $SERVER_CPU (1 thread / 1 worker), wrk -t1 on CPU $CLIENT_CPU, ${DURATION}s per case, $ROUNDS round(s)"
echo
echo "| round | case | server | connections | pipeline | req/s | server CPU us/req | p99 latency | errors |"
echo "|---|---|---|---|---|---|---|---|---|"
results="$tmp/results.txt"
: >"$results"
for round in $(seq 1 "$ROUNDS"); do
  while read -r name conns path depth; do
    [[ -z "$name" ]] && continue
    for server in $SERVERS; do
      [[ "$server" == floor* && "$path" != /plaintext ]] && continue
      start_server "$server"
      args=(-t1 "-c$conns" "-d${DURATION}s" --latency)
      extra=()
      if [[ "$depth" -gt 1 ]]; then
        args+=(-s "$here/pipeline.lua")
        extra=(-- "$depth")
      fi
      before=$(cpu_ticks "$server_pid")
      out=$(taskset -c "$CLIENT_CPU" wrk "${args[@]}" "http://127.0.0.1:$PORT$path" "${extra[@]}")
      after=$(cpu_ticks "$server_pid")
      stop_server
      requests=$(echo "$out" | awk '/requests in/ {print $1}')
      rps=$(echo "$out" | awk '/^Requests\/sec/ {printf "%.0f", $2}')
      errors=$(echo "$out" | awk '/Socket errors|Non-2xx/ {print}' | tr '\n' ' ')
      cpu_us=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$requests" 'BEGIN {printf "%.3f", t * 1e6 / hz / n}')
      p99="n/a (pipelined)"
      if [[ "$depth" -le 1 ]]; then
        p99=$(to_us "$(echo "$out" | awk '$1 == "99%" {print $2}')")
        p99="${p99} us"
      fi
      echo "| $round | $name | $server | $conns | $depth | $rps | $cpu_us | $p99 | ${errors:-0} |"
      echo "$server $name $rps $cpu_us ${p99%% *}" >>"$results"
    done
  done <<<"$CASES"
done
if [[ "$IDLE_CONNS" -gt 0 ]]; then
  for server in $SERVERS; do
    [[ "$server" == floor* ]] && continue
    start_server "$server"
    idle=$(python3 "$here/idle_conns.py" "$server_pid" "$PORT" "$IDLE_CONNS")
    stop_server
    echo "$server idle-memory $(echo "$idle" | awk '{print $(NF-1)}')" >>"$results"
  done
fi

echo
echo "Medians over $ROUNDS round(s):"
echo
echo "| case | weir req/s | nginx req/s | weir CPU us/req | nginx CPU us/req | floor CPU us/req | nginx/weir CPU per request | weir/floor | weir p99 | nginx p99 |"
echo "|---|---|---|---|---|---|---|---|---|---|"
awk '$2 != "idle-memory" {
         k = $1 SUBSEP $2; n[k]++; r[k, n[k]] = $3; c[k, n[k]] = $4; l[k, n[k]] = $5
         if (!($2 in seen)) { seen[$2] = 1; order[m++] = $2 } }
       function med(k, a,   i, j, t, v, cnt) {
         cnt = n[k]; if (cnt == 0) return ""
         for (i = 1; i <= cnt; i++) v[i] = a[k, i] + 0
         for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
         return (cnt % 2) ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2 }
       END { for (i = 0; i < m; i++) { cs = order[i]
               w = med("weir" SUBSEP cs, c); g = med("nginx" SUBSEP cs, c); f = med("floor" SUBSEP cs, c)
               wr = med("weir" SUBSEP cs, r); gr = med("nginx" SUBSEP cs, r)
               ratio = (w > 0 && g > 0) ? sprintf("%.1fx", g / w) : "-"
               fl = (w > 0 && f > 0) ? sprintf("%.2fx", w / f) : "-"
               wl = "-"; gl = "-"
               if (l["weir" SUBSEP cs, 1] != "n/a") { wl = med("weir" SUBSEP cs, l) " us"; gl = med("nginx" SUBSEP cs, l) " us" }
               printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", cs, wr, gr, w, g, (f == "" ? "-" : f), ratio, fl, wl, gl } }' "$results"
echo
awk '$2 == "idle-memory" { printf "idle keep-alive connection (%s): %s bytes of RSS each ('"$IDLE_CONNS"' connections)\n", $1, $3 }' "$results"
