#!/usr/bin/env bash
# bench/saturation/run.sh (also `bench/compare --saturation`): the write-throughput ceiling the way
# electric-sql/ds-bench measures it, for weir, the Durable Streams Node reference server and Redis Streams
# in one run (docs/benchmarks.md, "Saturation (ds-bench style)").
#
#   bench/compare --saturation [--streams 100,1000,10000] [--connections 64,256,1024,4096] [--secs 10]
#                              [--warmup-secs 2] [--plateau 0.05] [--cluster] [--out DIR]
#                              [-- EXTRA weir bench ARGS]
#
# Servers, each pinned to CPU 0 (taskset; their helper threads too), started fresh once for the run:
#   weir             weir serve --threads 1 --fsync always (every append fdatasync'ed before its answer)
#   durable-streams  npm @durable-streams/server (tests/node), in memory (bench/reference-server.mjs memory)
#   redis            redis-server --appendonly yes --appendfsync always --save '' (no RDB snapshots)
#   weir-cluster     with --cluster: three weir serve --threads 1 nodes of one Raft cluster (every entry
#                    fdatasync'ed on each node before it counts), all three on the same CPU as the others
#                    (a core's worth of cluster); the generator's connections go round robin over them,
#                    so most appends reach a follower first, and its CPU and RSS are the three summed
# The load generator, `weir bench --workloads saturation` (bench/saturation_workload.h), runs on CPU 1:
# for each stream count, for each target in turn, it creates the streams, climbs the connection ladder
# until throughput stops climbing by more than the plateau (5%), and deletes them. weir and the reference
# server get 256 B binary appends through an idempotent producer per stream (Producer-Id/Epoch/Seq);
# Redis gets `XADD <stream key> * d <256 B>` from the same generator, on the same kind of connection (one
# command in flight per connection, no pipelining), timed on the same clock into the same histogram, so
# the three differ only in the server. Results: DIR/report.html, results.json, results.md; every server's
# RSS and CPU every 5 s in server-rss.tsv; totals in server-cpu.txt; logs in raw/ (git-ignored).
# Env: WEIR_BIN (default build/release/src/app/weir), NODE (default node), SERVER_CPU (default 0),
#      CLIENT_CPU (default 1).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"

command_line="bench/compare --saturation $*"
streams="100,1000,10000" connections="64,256,1024,4096" secs=10 warmup=2 plateau=0.05 out="" extra=()
cluster=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --streams) streams="$2"; shift ;;
    --connections) connections="$2"; shift ;;
    --secs) secs="$2"; shift ;;
    --warmup-secs) warmup="$2"; shift ;;
    --plateau) plateau="$2"; shift ;;
    --out) out="$2"; shift ;;
    --cluster) cluster=1 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "saturation: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[[ -n "$out" ]] || out="bench/results/$(date -u +%Y-%m-%d)-saturation"
server_cpu="${SERVER_CPU:-0}"
client_cpu="${CLIENT_CPU:-1}"

weir_bin="${WEIR_BIN:-build/release/src/app/weir}"
[[ -x "$weir_bin" ]] || weir_bin="build/release/src/server/weir"
node_bin="${NODE:-node}"
for tool in "$weir_bin" "$node_bin" redis-server redis-cli taskset; do
  command -v "$tool" >/dev/null || [[ -x "$tool" ]] || { echo "saturation: $tool is missing" >&2; exit 1; }
done
[[ -d tests/node/node_modules/@durable-streams/server ]] ||
  { echo "saturation: run npm install in tests/node first (the reference server)" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}
wait_port() {  # NAME PORT PID
  for _ in $(seq 1 200); do
    kill -0 "$3" 2>/dev/null || { echo "saturation: $1 exited during start-up" >&2; tail -n 20 "$out/raw/$1.log" >&2; exit 1; }
    (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "saturation: $1 does not listen on $2" >&2
  exit 1
}

work="$(mktemp -d -t weir-saturation.XXXXXX)"
mkdir -p "$out/raw"
pids=() sampler_pid=""
stop_all() {
  for pid in $sampler_pid ${pids[@]+"${pids[@]}"}; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  pids=() sampler_pid=""
  rm -rf "$work"
}
trap stop_all EXIT

weir_port="$(free_port)" node_port="$(free_port)" redis_port="$(free_port)"
taskset -c "$server_cpu" "$weir_bin" serve --listen "127.0.0.1:$weir_port" --data-dir "$work/weir-data" \
  --threads 1 --fsync always --log-level warn >"$out/raw/weir.log" 2>&1 &
weir_pid=$!
pids+=("$weir_pid")
taskset -c "$server_cpu" "$node_bin" bench/reference-server.mjs "$node_port" memory \
  >"$out/raw/durable-streams.log" 2>&1 &
node_pid=$!
pids+=("$node_pid")
mkdir -p "$work/redis"
taskset -c "$server_cpu" redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$work/redis" \
  --appendonly yes --appendfsync always --save '' --daemonize no --logfile "$(cd "$out/raw" && pwd)/redis.log" &  # absolute: redis-server changes to --dir first
redis_pid=$!
pids+=("$redis_pid")
wait_port weir "$weir_port" "$weir_pid"
wait_port durable-streams "$node_port" "$node_pid"
wait_port redis "$redis_port" "$redis_pid"
until redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG; do sleep 0.05; done

names=(weir durable-streams redis)
cluster_targets=()
if [[ $cluster == 1 ]]; then
  peer_ports=() http_ports=() peers="" urls="" cluster_pids=""
  for i in 1 2 3; do
    http_ports+=("$(free_port)")
    peer_ports+=("$(free_port)")
    peers+="${peers:+,}$i=127.0.0.1:${peer_ports[i - 1]}"
  done
  for i in 1 2 3; do
    taskset -c "$server_cpu" "$weir_bin" serve --listen "127.0.0.1:${http_ports[i - 1]}" \
      --data-dir "$work/cluster-node-$i" --node-id "$i" --peer-listen "127.0.0.1:${peer_ports[i - 1]}" \
      --peers "$peers" --threads 1 --fsync always --log-level warn >"$out/raw/weir-cluster-node-$i.log" 2>&1 &
    pids+=("$!")
    names+=("weir-cluster-node-$i")
    cluster_pids+="${cluster_pids:+,}$!"
    urls+="${urls:+,}http://127.0.0.1:${http_ports[i - 1]}"
  done
  for i in 1 2 3; do wait_port "weir-cluster-node-$i" "${http_ports[i - 1]}" "${pids[i + 2]}"; done
  # Serving once every node has a quorum and every raft group a leader.
  for _ in $(seq 1 300); do
    ready=1
    for port in "${http_ports[@]}"; do
      curl -sf --max-time 1 "http://127.0.0.1:$port/cluster" | python3 -c '
import json, sys
groups = json.load(sys.stdin)["raft_groups"]
sys.exit(0 if groups and all(g["leader"] for g in groups) else 1)' || { ready=0; break; }
    done
    [[ $ready == 1 ]] && break
    sleep 0.1
  done
  [[ $ready == 1 ]] || { echo "saturation: the cluster had no leader for every group within 30 s" >&2; exit 1; }
  cluster_targets=(--target "weir-cluster=$urls" --server-pid "weir-cluster=$cluster_pids"
                   --info "weir-cluster=three weir serve --threads 1 --fsync always nodes of one cluster (--peers $peers), all pinned to CPU $server_cpu; connections round robin over the nodes")
fi

weir_commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if ! git diff --quiet HEAD -- src bench 2>/dev/null; then weir_commit="$weir_commit (with uncommitted changes in src/ or bench/)"; fi
ds_version="$(node -e 'console.log(require("./tests/node/node_modules/@durable-streams/server/package.json").version)' 2>/dev/null || echo unknown)"
info=(--info "weir=commit $weir_commit; weir serve --threads 1 --fsync always, pinned to CPU $server_cpu"
      --info "weir binary=$("$weir_bin" --version 2>&1 | head -n 1) ($weir_bin)"
      --info "durable-streams=@durable-streams/server $ds_version, in memory (bench/reference-server.mjs PORT memory), Node $("$node_bin" --version), pinned to CPU $server_cpu"
      --info "redis=$(redis-server --version | cut -d' ' -f3), --appendonly yes --appendfsync always --save '', pinned to CPU $server_cpu; XADD <key> * d <256 B> per append, keys created with one 1-byte entry and DELeted after"
      --info "generator=weir bench --workloads saturation, one thread, pinned to CPU $client_cpu"
      --info "bench/compare command=$command_line"
      --info "cpus=$(nproc): servers on CPU $server_cpu, generator on CPU $client_cpu; other jobs share this machine"
      --info "load average at start=$(cut -d' ' -f1-3 /proc/loadavg)")
echo "saturation: weir (pid $weir_pid, port $weir_port), durable-streams (pid $node_pid, port $node_port), redis (pid $redis_pid, port $redis_port); streams $streams; ladder $connections" >&2

declare -A cpu0
for pid in "${pids[@]}"; do cpu0[$pid]="$(cpu_seconds "$pid")"; done
(
  printf 'utc\tserver\tpid\trss_mib\tcpu_s\n'
  while true; do
    for i in "${!pids[@]}"; do
      rss="$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/${pids[i]}/status" 2>/dev/null || true)"
      [[ -n "$rss" ]] && printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%H:%M:%S)" "${names[i]}" "${pids[i]}" "$rss" "$(cpu_seconds "${pids[i]}")"
    done
    sleep 5
  done
) >"$out/server-rss.tsv" &
sampler_pid=$!

taskset -c "$client_cpu" "$weir_bin" bench --workloads saturation \
  --target "weir=http://127.0.0.1:$weir_port" --target "durable-streams=http://127.0.0.1:$node_port" \
  --target "redis=redis://127.0.0.1:$redis_port" ${cluster_targets[@]+"${cluster_targets[@]}"} \
  --server-pid "weir=$weir_pid" --server-pid "durable-streams=$node_pid" --server-pid "redis=$redis_pid" \
  --sat-streams "$streams" --sat-connections "$connections" --sat-secs "$secs" --sat-warmup-secs "$warmup" \
  --sat-plateau "$plateau" --append-bytes 256 --settle-secs 10 "${info[@]}" --out "$out" ${extra[@]+"${extra[@]}"}

{
  for i in "${!pids[@]}"; do
    echo "${names[i]} (pid ${pids[i]}): $(awk -v a="$(cpu_seconds "${pids[i]}")" -v b="${cpu0[${pids[i]}]}" 'BEGIN{printf "%.2f", a-b}') CPU seconds during the run"
  done
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  awk -F'\t' 'NR > 1 && $4 + 0 > peak[$2] { peak[$2] = $4 + 0 }
               END { for (s in peak) printf "peak RSS of %s: %.0f MiB (sampled every 5 s)\n", s, peak[s] }' \
    "$out/server-rss.tsv" | sort
} >"$out/server-cpu.txt"
cat "$out/server-cpu.txt" >&2
stop_all
echo "saturation: results in $out (results.md, report.html)" >&2
