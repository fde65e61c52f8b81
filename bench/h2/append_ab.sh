#!/usr/bin/env bash
# Appends over h2c (and HTTP/1.1) against two or more `weir serve` builds taking turns within each round:
# server CPU per append (perf stat task-clock of every thread), and the system calls behind it (sends,
# epoll_wait, all of them) per append. `weir serve --threads 1 --fsync interval:100` on CPU 0, 64 streams
# created with PUT, 256 B POSTs from h2load -t1 on CPU 1 (the stream URLs round robin), as run.sh's
# append part.
#
#   bench/h2/append_ab.sh OLD/weir NEW/weir                     # 3 rounds, 4 x 16 and 64 x 1 over h2c
#   CASES="h2:4:16 h1:64:1" ROUNDS=5 bench/h2/append_ab.sh OLD/weir NEW/weir
#
# Needs root (or kernel.perf_event_paranoid <= -1) for the syscall tracepoints.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-60000}
CASES=${CASES:-"h2:4:16 h2:64:1"}  # protocol:connections:streams-per-connection
PORT=${PORT:-18286}
FSYNC=${FSYNC:-interval:100}

tmp=$(mktemp -d /tmp/weir-h2-append-ab.XXXXXX)
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
head -c 256 /dev/zero | tr '\0' 'x' >"$tmp/body"

events="task-clock,context-switches,raw_syscalls:sys_enter"
for s in epoll_wait recvfrom sendto sendmsg writev write; do events+=",syscalls:sys_enter_$s"; done

echo "# appends, $REQUESTS per run, $ROUNDS round(s), load average $(cut -d' ' -f1-3 /proc/loadavg) ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
echo
echo "| round | case | build | appends/s | server CPU us/append | syscalls/append | sends/append | epoll_wait/append | context switches/append |"
echo "|---|---|---|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
  for case in $CASES; do
    IFS=: read -r proto conns streams <<<"$case"
    for bin in "$@"; do
      rm -rf "$tmp/data"
      taskset -c 0 "$bin" serve --listen "127.0.0.1:$PORT" --threads 1 --data-dir "$tmp/data" --fsync "$FSYNC" \
        --log-level warn >"$tmp/serve.log" 2>&1 &
      server_pid=$!
      for _ in $(seq 1 200); do
        if curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz"; then break; fi
        sleep 0.05  # polling for the listener to come up
      done
      urls=()
      for i in $(seq 1 64); do
        curl -sf -X PUT -H 'Content-Type: text/plain' "http://127.0.0.1:$PORT/v1/stream/append-$i" >/dev/null
        urls+=("http://127.0.0.1:$PORT/v1/stream/append-$i")
      done
      flags=()
      [[ "$proto" == h1 ]] && flags=(--h1)
      perf stat -x, -e "$events" -p "$server_pid" -o "$tmp/stat.txt" &
      perf_pid=$!
      sleep 0.3  # perf attaches
      taskset -c 1 h2load -t1 "${flags[@]}" -c"$conns" -m"$streams" -n"$REQUESTS" -d "$tmp/body" \
        -H 'content-type: text/plain' "${urls[@]}" >"$tmp/h2load.out" 2>&1
      kill -INT "$perf_pid"
      wait "$perf_pid" || true
      kill -TERM "$server_pid"
      wait "$server_pid" || true
      server_pid=""
      ok=$(awk '/^status codes:/ {print $3}' "$tmp/h2load.out")
      [[ "$ok" == "$REQUESTS" ]] || echo "warning: $ok of $REQUESTS appends answered 2xx" >&2
      rate=$(awk '/^finished in/ {print $4}' "$tmp/h2load.out")
      awk -F, -v n="$REQUESTS" -v r="$round" -v c="$proto $conns x $streams" -v b="$bin" -v rate="$rate" '
        { v[$3] = $1 }
        END {
          sends = v["syscalls:sys_enter_sendto"] + v["syscalls:sys_enter_sendmsg"] + v["syscalls:sys_enter_writev"]
          printf "| %d | %s | %s | %.0f | %.2f | %.2f | %.3f | %.3f | %.3f |\n", r, c, b, rate,
            v["task-clock"] * 1000 / n, v["raw_syscalls:sys_enter"] / n, sends / n,
            v["syscalls:sys_enter_epoll_wait"] / n, v["context-switches"] / n }' "$tmp/stat.txt"
    done
  done
done
