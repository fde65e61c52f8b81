#!/usr/bin/env bash
# What the kernel does for one h2c request, per server: system calls by kind, context switches and CPU
# time (perf stat: the syscalls tracepoints and task-clock of the server and its children) over a
# fixed number of h2load requests, with the response bytes per request from h2load's summary, and TCP
# segments per request (nstat: system-wide, so loopback traffic of other processes counts too). The
# servers take turns within each round, as in run.sh; same pinning (server CPU 0, h2load CPU 1).
#
#   bench/h2/syscalls.sh                                     # weir and h2o, 16 x 1, 3 rounds of 200,000
#   SERVERS="weir weir-base h2o nginx" STREAMS=10 bench/h2/syscalls.sh
#   WEIR_TE_BASE=OLD/weir-techempower SERVERS="weir weir-base h2o" bench/h2/syscalls.sh
#
# Needs root (or kernel.perf_event_paranoid <= -1) for the tracepoints.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
WEIR_TE=${WEIR_TE:-$root/build/release/examples/techempower/weir-techempower}
WEIR_TE_BASE=${WEIR_TE_BASE:-}
SERVERS=${SERVERS:-"weir h2o"}
REQUESTS=${REQUESTS:-200000}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-16}
STREAMS=${STREAMS:-1}
PORT=${PORT:-18284}

tmp=$(mktemp -d /tmp/weir-h2-syscalls.XXXXXX)
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

start_server() {  # name
  case "$1" in
    weir) taskset -c 0 "$WEIR_TE" --listen "127.0.0.1:$PORT" --threads 1 >"$tmp/server.log" 2>&1 & ;;
    weir-base) taskset -c 0 "$WEIR_TE_BASE" --listen "127.0.0.1:$PORT" --threads 1 >"$tmp/server.log" 2>&1 & ;;
    nginx)
      mkdir -p "$tmp/nginx"
      sed -e "s|@PREFIX@|$tmp/nginx|g" -e "s|@PORT@|$PORT|g" "$here/nginx.conf.in" >"$tmp/nginx/nginx.conf"
      taskset -c 0 nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" &
      ;;
    h2o)
      mkdir -p "$tmp/h2o"
      printf 'Hello, World!' >"$tmp/h2o/plaintext.txt"
      sed -e "s|@PREFIX@|$tmp/h2o|g" -e "s|@PORT@|$PORT|g" -e "s|@USER@|$(id -un)|g" "$here/h2o.conf.in" \
        >"$tmp/h2o/h2o.conf"
      taskset -c 0 h2o -c "$tmp/h2o/h2o.conf" >"$tmp/server.log" 2>&1 &
      ;;
    *) echo "unknown server '$1' (weir, weir-base, nginx, h2o)" >&2; exit 2 ;;
  esac
  server_pid=$!
  for _ in $(seq 1 200); do
    if curl -sf --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$PORT/plaintext"; then return 0; fi
    sleep 0.05  # polling for the listener to come up
  done
  echo "server $1 did not come up" >&2
  exit 1
}

events="task-clock,context-switches,raw_syscalls:sys_enter"
for s in epoll_wait epoll_ctl recvfrom read sendto sendmsg write writev pread64 openat close; do
  events+=",syscalls:sys_enter_$s"
done
# Reads that found nothing (EAGAIN) or failed: the reads' exits with a negative return.
failed_reads=(-e syscalls:sys_exit_recvfrom --filter 'ret < 0' -e syscalls:sys_exit_read --filter 'ret < 0')

echo "# h2c requests against the kernel: $CONNS connections x $STREAMS streams, $REQUESTS requests per run," \
  "$ROUNDS round(s), load average $(cut -d' ' -f1-3 /proc/loadavg) ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
echo
echo "| round | server | req/s | CPU us/req | syscalls/req | epoll_wait | epoll_ctl | reads | reads EAGAIN | writes | pread/openat/close | context switches/req | response bytes/req | TCP segments/req |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
  for s in $SERVERS; do
    start_server "$s"
    pids=$server_pid
    for c in $(pgrep -P "$server_pid" || true); do pids+=",$c"; done
    perf stat -x, -e "$events" "${failed_reads[@]}" -p "$pids" -o "$tmp/stat.txt" &
    perf_pid=$!
    sleep 0.3  # perf attaches
    nstat -n >/dev/null
    taskset -c 1 h2load -t1 -c"$CONNS" -m"$STREAMS" -n"$REQUESTS" "http://127.0.0.1:$PORT/plaintext" >"$tmp/h2load.out" 2>&1
    segs=$(nstat -z TcpOutSegs | awk '/TcpOutSegs/ {print $2}')
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
    kill -TERM "$server_pid"
    wait "$server_pid" || true
    server_pid=""
    rps=$(awk '/^finished in/ {print $4}' "$tmp/h2load.out")
    bytes=$(awk '/^traffic:/ {gsub(/[()]/, "", $3); print $3}' "$tmp/h2load.out")
    awk -F, -v n="$REQUESTS" -v s="$s" -v r="$round" -v rps="$rps" -v bytes="$bytes" -v segs="$segs" '
      { v[$3] = $1 }
      END {
        rd = v["syscalls:sys_enter_recvfrom"] + v["syscalls:sys_enter_read"]
        wr = v["syscalls:sys_enter_sendto"] + v["syscalls:sys_enter_sendmsg"] + v["syscalls:sys_enter_write"] + v["syscalls:sys_enter_writev"]
        ea = v["syscalls:sys_exit_recvfrom"] + v["syscalls:sys_exit_read"]
        printf "| %d | %s | %.0f | %.2f | %.2f | %.3f | %.4f | %.3f | %.4f | %.3f | %.2f/%.2f/%.2f | %.4f | %.1f | %.2f |\n", r, s, rps,
          v["task-clock"] * 1000 / n, v["raw_syscalls:sys_enter"] / n, v["syscalls:sys_enter_epoll_wait"] / n,
          v["syscalls:sys_enter_epoll_ctl"] / n, rd / n, ea / n, wr / n, v["syscalls:sys_enter_pread64"] / n,
          v["syscalls:sys_enter_openat"] / n, v["syscalls:sys_enter_close"] / n, v["context-switches"] / n,
          bytes / n, segs / n }' "$tmp/stat.txt"
  done
done
