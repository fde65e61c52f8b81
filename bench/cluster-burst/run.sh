#!/usr/bin/env bash
# bench/cluster-burst/run.sh BIN OUTDIR [runs]: the 512 KiB write burst against a 3-node cluster, repeated,
# with one summary line per run (bench errors, elections, leaderships lost, longest loop turn, longest
# peer-queue wait). The method of docs/benchmarks.md "Cluster: elections during the burst"; see
# README.md beside this script.
#
# Each run: start 3 nodes as `bench/compare --cluster` does (weir serve --node-id N --peer-listen ...
# --peers ... --threads 1, data under OUTDIR), wait until every group has a leader plus 12 s (leader
# balancing), run `weir bench --target weir-cluster=<3 URLs> --workloads seed --concurrency 128,256
# --throughput-secs 5 --latency-count 100 --sse-count 100` (each level ends its write phase with the
# burst: one 512 KiB append per writer, all at once), read every node's GET /cluster and /metrics, stop
# the nodes by PID, delete their data. OUTDIR keeps per run: the nodes' logs, cluster/metrics JSON and
# text, the bench's results.json; OUTDIR/summary.tsv one line per run.
# Env: WEIR_CLUSTER_FLAGS (flags for every node; default --threads 1), LABEL (run name prefix; default
#      the binary's file name), BENCH_ARGS (replaces the weir bench arguments after --target).
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2; fi
bin="$(realpath "$1")"
out="$(realpath -m "$2")"
runs="${3:-1}"
label="${LABEL:-$(basename "$bin")}"
read -r -a node_flags <<<"${WEIR_CLUSTER_FLAGS:---threads 1}"
read -r -a bench_args <<<"${BENCH_ARGS:---workloads seed --concurrency 128,256 --throughput-secs 5 --latency-count 100 --sse-count 100}"
mkdir -p "$out"
summary="$out/summary.tsv"
[[ -f "$summary" ]] || printf 'run\tstart_utc\tload1\tbench_errors\telections_started\tleaderships_lost\tlost_quorum\tslow_turns\tlongest_turn_s\tmax_queue_ms\tmax_urgent_queue_ms\tleader_silence_ms\tread_yields\twrite_mib_s\tsmall_req_s\terror_kinds\n' >"$summary"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

pids=()
data_dirs=()
stop_nodes() {
  for pid in ${pids[@]+"${pids[@]}"}; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  pids=()
  # The disk is shared with CI: never leave the nodes' data behind.
  for d in ${data_dirs[@]+"${data_dirs[@]}"}; do rm -rf "$d"; done
  data_dirs=()
}
trap stop_nodes EXIT

# Ready: every node answers /healthz 200 and knows a leader for every raft group.
wait_cluster() {  # PORT...
  for _ in $(seq 1 600); do
    local ready=1 port
    for port in "$@"; do
      if ! curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$port/healthz" ||
         ! curl -sf --max-time 1 "http://127.0.0.1:$port/cluster" | python3 -c '
import json, sys
groups = json.load(sys.stdin)["raft_groups"]
sys.exit(0 if groups and all(g["leader"] for g in groups) else 1)'; then
        ready=0
        break
      fi
    done
    [[ $ready == 1 ]] && return 0
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null || { echo "cluster-burst: node pid $pid exited during start-up" >&2; return 1; }
    done
    sleep 0.1
  done
  echo "cluster-burst: no leader for every group within 60 s" >&2
  return 1
}

one_run() {  # NAME
  local name="$1" dir="$out/$1" ports=() peer_ports=() peers="" urls="" i
  mkdir -p "$dir"
  for i in 1 2 3; do
    ports+=("$(free_port)")
    peer_ports+=("$(free_port)")
    peers+="${peers:+,}$i=127.0.0.1:${peer_ports[i - 1]}"
  done
  local load start
  load="$(cut -d' ' -f1 /proc/loadavg)"
  start="$(date -u +%H:%M:%S)"
  for i in 1 2 3; do
    data_dirs+=("$dir/data-$i")
    "$bin" serve --listen "127.0.0.1:${ports[i - 1]}" --data-dir "$dir/data-$i" --node-id "$i" \
      --peer-listen "127.0.0.1:${peer_ports[i - 1]}" --peers "$peers" "${node_flags[@]}" >"$dir/node-$i.log" 2>&1 &
    pids+=($!)
    urls+="${urls:+,}http://127.0.0.1:${ports[i - 1]}"
  done
  wait_cluster "${ports[@]}"
  sleep 12  # leader balancing moves groups during the first seconds
  for i in 1 2 3; do curl -sf "http://127.0.0.1:${ports[i - 1]}/cluster" >"$dir/cluster-before-$i.json"; done
  "$bin" bench --target "weir-cluster=$urls" "${bench_args[@]}" --out "$dir/bench" >"$dir/bench.log" 2>&1 ||
    echo "cluster-burst: weir bench exited with $? (see $dir/bench.log)" >&2
  for i in 1 2 3; do
    curl -sf "http://127.0.0.1:${ports[i - 1]}/cluster" >"$dir/cluster-$i.json" || echo '{}' >"$dir/cluster-$i.json"
    curl -sf "http://127.0.0.1:${ports[i - 1]}/metrics" >"$dir/metrics-$i.txt" || : >"$dir/metrics-$i.txt"
  done
  stop_nodes
  python3 "$(dirname "$0")/summarize.py" "$dir" "$name" "$start" "$load" >>"$summary"
  tail -n 1 "$summary"
}

for n in $(seq 1 "$runs"); do one_run "$label-$n"; done
