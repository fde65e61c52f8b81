#!/usr/bin/env bash
# Where a 3-node cluster's CPU goes on small appends: three `weir serve --threads 1` nodes on loopback,
# 15 s for leader balancing, a 5 s warm-up, then weir bench many-streams (64 streams, 64 closed-loop
# writers, 256 B appends, connections round robin over the nodes) for 14 s, with `perf record -g` on all
# three nodes for 10 s of it. Prints the appends per second; the profile goes to PERF_DATA.
#   profile.sh WEIR_BIN [PERF_DATA]
set -euo pipefail
bin=${1:?weir binary}
# shellcheck source=../../lib/local-cluster.sh
. "$(dirname "$0")/../../lib/local-cluster.sh"
local_cluster_start "$bin"
sleep 15
"$bin" bench --target "t=$urls" --workloads many-streams --streams 64 --writers 64 --append-bytes 256 --many-secs 5 --settle-secs 0 --out "$work/warm" >/dev/null 2>&1
"$bin" bench --target "t=$urls" --workloads many-streams --streams 64 --writers 64 --append-bytes 256 --many-secs 14 --settle-secs 0 --out "$work/bench" >"$work/bench.log" 2>&1 &
b=$!
sleep 2
perf record -F 299 -g -o "${2:-perf.data}" -p "$(IFS=,; echo "${pids[*]}")" -- sleep 10 >/dev/null 2>&1
wait $b
python3 -c "import json; d=json.load(open('$work/bench/results.json')); m=d['many_streams'][0]; print(m['counts']['appends']/14, 'appends/s', m.get('latency_ms',''))" || true
