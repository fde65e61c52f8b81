#!/usr/bin/env bash
# What appends cost with the cold tier on against off (docs/benchmarks.md, "Cold tier: appends with the
# tier on"), in one run on one machine: two single-threaded nodes of one build pinned to CPU 0, one
# without a tier and one with --cold on s3rver (pinned to CPU 1, with the load generator); `weir bench
# --workloads many-streams` (64 writers, 1 KiB appends over 1,000 streams) against both, in alternating
# order, ROUNDS times. The report gives appends/s, p50/p99 and each node's CPU; s3rver's CPU is printed
# apart (it is the bucket's, not the node's), and each node's event-loop lag histogram at the end
# (loop-lag.txt: how late the loop got round to a probe due every 25 ms).
# Usage: bench/cold/append-cost.sh WEIR_BINARY OUT_DIR [ROUNDS] [SECS]
set -euo pipefail
weir="$(realpath "$1")"
out="$2" rounds="${3:-2}" secs="${4:-10}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$out"
. "$root/bench/cold/scratch.sh" cold-append
taskset -a -cp 1 "$S3RVER_PID" >/dev/null
start_node "$weir" local 5221
start_node "$weir" tiered 5222 --cold s3://bench/node --s3-endpoint "http://127.0.0.1:$S3RVER_PORT" \
  --local-bytes 1073741824 --cold-max-age-ms 1000
local_t=(local=http://127.0.0.1:5221/v1/stream)
tiered_t=(tiered=http://127.0.0.1:5222/v1/stream)
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) -eq 1 ]; then order=("${local_t[@]}" "${tiered_t[@]}"); else order=("${tiered_t[@]}" "${local_t[@]}"); fi
  s0="$(cpu_ticks "$S3RVER_PID")"
  taskset -c 1 "$weir" bench --target "${order[0]}" --target "${order[1]}" \
    --server-pid "local=${node_pid[local]}" --server-pid "tiered=${node_pid[tiered]}" \
    --workloads many-streams --streams 1000 --writers 64 --append-bytes 1024 --many-secs "$secs" \
    --settle-secs 10 --out "$out/round-$round" | tail -8 | tee "$out/round-$round.txt"
  echo "s3rver CPU over round $round: $(echo "($(cpu_ticks "$S3RVER_PID") - $s0) / $(getconf CLK_TCK)" | bc -l | cut -c1-5) s" |
    tee -a "$out/round-$round.txt"
done
for port in 5221 5222; do
  echo "# node on $port"
  curl -fsS "http://127.0.0.1:$port/metrics" | grep '^weir_event_loop_lag_seconds'
done >"$out/loop-lag.txt"
