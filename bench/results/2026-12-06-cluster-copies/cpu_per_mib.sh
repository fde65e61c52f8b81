#!/usr/bin/env bash
# CPU per MiB appended and disk bytes per appended byte, for one weir binary, as a 3-node cluster (started
# as bench/compare --cluster starts it: every node --threads 1) or a single node (its defaults).
#   cpu_per_mib.sh WEIR_BIN LABEL cluster|single APPEND_BYTES SECS OUT_TSV
# Load, after a warm-up of the same (WARM_SECS, 8): weir bench's many-streams workload (64 streams, 64 closed-loop writers, APPEND_BYTES per append,
# SECS of writes; connections round robin over the nodes). Measured over the bench run plus 1 s after it:
# utime+stime of every server process (/proc/PID/stat) and write_bytes (/proc/PID/io: bytes the process
# sent to the block layer, page granularity), against the bytes the bench appended.
set -euo pipefail
bin=$1 label=$2 mode=$3 bytes=$4 secs=$5 out_tsv=$6
bench_bin=${BENCH_BIN:-$bin}
work=$(mktemp -d /tmp/h3/cpm.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.3f", ($12 + $13) / hz }' "/proc/$1/stat"; }
wbytes() { awk '/^write_bytes/ {print $2}' "/proc/$1/io"; }
urls=""
if [[ $mode == cluster ]]; then
  ports=() pports=() peers=""
  for i in 1 2 3; do ports+=("$(free_port)"); pports+=("$(free_port)"); peers+="${peers:+,}$i=127.0.0.1:${pports[i-1]}"; done
  for i in 1 2 3; do
    "$bin" serve --listen "127.0.0.1:${ports[i-1]}" --data-dir "$work/n$i" --node-id "$i" \
      --peer-listen "127.0.0.1:${pports[i-1]}" --peers "$peers" --threads 1 >"$work/n$i.log" 2>&1 &
    pids+=($!)
    urls+="${urls:+,}http://127.0.0.1:${ports[i-1]}"
  done
  for _ in $(seq 1 300); do
    ok=1
    for p in "${ports[@]}"; do
      curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$p/healthz" && curl -sf --max-time 1 "http://127.0.0.1:$p/cluster" |
        python3 -c 'import json,sys; g=json.load(sys.stdin)["raft_groups"]; sys.exit(0 if g and all(x["leader"] for x in g) else 1)' || { ok=0; break; }
    done
    [[ $ok == 1 ]] && break
    sleep 0.1
  done
  [[ $ok == 1 ]] || { echo "cluster not ready" >&2; tail "$work"/n*.log >&2; exit 1; }
  sleep 12  # leader balancing (as the earlier CPU-per-MiB runs)
else
  port=$(free_port)
  "$bin" serve --listen "127.0.0.1:$port" --data-dir "$work/single" >"$work/single.log" 2>&1 &
  pids+=($!)
  urls="http://127.0.0.1:$port"
  for _ in $(seq 1 100); do curl -s -o /dev/null --max-time 1 "$urls/" && break; sleep 0.1; done
fi
# Warm-up (not measured): the first seconds of a fresh server fault in its memory (hot tier, libraft's
# entries), which costs more than the steady state (docs/benchmarks.md, "Cluster CPU").
"$bench_bin" bench --target "t=$urls" --workloads many-streams --streams 64 --writers 64 --append-bytes "$bytes" \
  --many-secs "${WARM_SECS:-8}" --settle-secs 0 --out "$work/warm" >"$work/warm.log" 2>&1
declare -A c0 w0
for p in "${pids[@]}"; do c0[$p]=$(cpu "$p"); w0[$p]=$(wbytes "$p"); done
"$bench_bin" bench --target "t=$urls" --workloads many-streams --streams 64 --writers 64 --append-bytes "$bytes" \
  --many-secs "$secs" --settle-secs 0 --out "$work/bench" >"$work/bench.log" 2>&1
sleep 1
appended=$(python3 -c "import json; d=json.load(open('$work/bench/results.json')); print(sum(m['counts']['append_bytes'] for m in d['many_streams']))")
appends=$(python3 -c "import json; d=json.load(open('$work/bench/results.json')); print(sum(m['counts']['appends'] for m in d['many_streams']))")
cpus="" wbs="" total=0
for p in "${pids[@]}"; do
  c=$(python3 -c "print(round($(cpu "$p") - ${c0[$p]}, 3))")
  w=$(( $(wbytes "$p") - ${w0[$p]} ))
  cpus+="${cpus:+/}$c"; wbs+="${wbs:+/}$(python3 -c "print(round($w / max($appended,1), 2))")"
  total=$(python3 -c "print($total + $c)")
done
mib=$(python3 -c "print($appended / 1048576)")
printf '%s\t%s\t%s\t%s\t%s\t%.1f\t%.2f\t%s\t%.2f\t%s\n' "$(date -u +%H:%M:%S)" "$label" "$mode" "$bytes" "$appends" \
  "$mib" "$(python3 -c "print($mib / $secs)")" "$cpus" "$(python3 -c "print(1000 * $total / max($mib, 1e-9))")" "$wbs" | tee -a "$out_tsv"
