#!/usr/bin/env bash
# ctx.sh BIN OUTD [BYTES]: 3-node cluster, 64 writers, counts context switches and syscalls per thread over 10 s
set -euo pipefail
bin=$1; OUTD=$2; bytes=${3:-256}
mkdir -p "$OUTD"
# shellcheck source=../../lib/local-cluster.sh
. "$(dirname "$0")/../../lib/local-cluster.sh"
local_cluster_start "$bin"
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
