#!/usr/bin/env bash
# ctx.sh BIN OUTD [BYTES]: 3-node cluster, 64 writers, counts context switches and syscalls per thread over 10 s
set -euo pipefail
bin=$1; OUTD=$2; bytes=${3:-256}
mkdir -p "$OUTD"
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ports=() pports=() peers="" urls=""
for i in 1 2 3; do ports+=("$(free_port)"); pports+=("$(free_port)"); done
for i in 1 2 3; do peers+="${peers:+,}$i=127.0.0.1:${pports[i-1]}"; done
for i in 1 2 3; do
  "$bin" serve --listen "127.0.0.1:${ports[i-1]}" --data-dir "$work/n$i" --node-id "$i" \
    --peer-listen "127.0.0.1:${pports[i-1]}" --peers "$peers" --threads 1 ${WEIR_FLAGS:-} >"$work/n$i.log" 2>&1 &
  pids+=($!)
  urls+="${urls:+,}http://127.0.0.1:${ports[i-1]}"
done
sleep 15
"$bin" bench --target "t=$urls" --workloads many-streams --streams 64 --writers 64 --append-bytes $bytes --many-secs 5 --settle-secs 0 --out "$work/warm" >/dev/null 2>&1
"$bin" bench --target "t=$urls" --workloads many-streams --streams 64 --writers 64 --append-bytes $bytes --many-secs 14 --settle-secs 0 --out "$work/bench" >"$work/bench.log" 2>&1 &
b=$!
sleep 2
snap() { for p in "${pids[@]}"; do for t in /proc/$p/task/*; do echo "$p $(basename $t) $(cat $t/comm) $(grep ctxt $t/status | awk '{print $2}' | tr '\n' ' ') $(awk '{print $14+$15}' $t/stat)"; done; done; }
snap > "$OUTD/ctx0"
perf stat -e context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_writev,syscalls:sys_enter_recvfrom,syscalls:sys_enter_readv,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_futex,syscalls:sys_enter_pwrite64,syscalls:sys_enter_fdatasync,syscalls:sys_enter_recvmsg,syscalls:sys_enter_epoll_ctl --per-thread -p "$(IFS=,; echo "${pids[*]}")" -- sleep 10 2> "$OUTD/perfstat" >/dev/null
snap > "$OUTD/ctx1"
wait $b
python3 -c "import json; d=json.load(open('$work/bench/results.json')); m=d['many_streams'][0]; print(m['counts']['appends']/14, 'appends/s', m.get('latency_ms',''))" | tee "$OUTD/rate"
