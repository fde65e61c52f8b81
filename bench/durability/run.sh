#!/usr/bin/env bash
# bench/durability/run.sh: durable weir against the Durable Streams Node reference server, both fsyncing
# every append, measured in one run (docs/benchmarks.md, section "Durability").
#
#   bench/durability/run.sh [--secs N] [--out DIR] [--fsync MODE] [--no-audit] [--dry-run]
#
# Starts `weir serve --fsync always` (release build) and the reference server (npm @durable-streams/server
# 0.3.7, file-backed through bench/reference-server.mjs: it writes each append to the stream's segment file
# and fdatasyncs it before answering) on loopback, both with their data on the same disk, and runs
# `weir bench --concurrency 64` against both:
#   - "Small events": 1 KiB appends from 64 connections over 64 streams, closed loop (appends/s);
#   - "Append latency": 100 sequential 8 KiB appends on one stream (p50/p99).
# (weir bench also runs its other phases at that level; only these two are summarised here.)
# Then, unless --no-audit, an fsync audit: strace counts fsync/fdatasync of each server during 200
# sequential 8 KiB appends (curl, one at a time): each append must have been covered by its own sync.
# Prints the table and the ratios and writes them to DIR/durability.md next to weir bench's results.
#   --secs N      length of each throughput phase (default 15)
#   --fsync MODE  weir's --fsync mode (default always)
#   --threads N   weir's event loops (default: 1 on a machine with 2 CPUs or fewer, where the load
#                 generator needs the other CPU and a second loop only adds cross-core hand-offs and
#                 context switches; 2 otherwise). The reference server is one Node process.
#   --dry-run     allow a weir without --fsync (in-memory): a rehearsal, not a result
# Env: WEIR_BIN (default build/release/src/app/weir, built if missing), NODE (default node).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"

secs=15
out=""
fsync_mode=always
threads=""
audit=1
dry_run=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --secs) secs="$2"; shift ;;
    --out) out="$2"; shift ;;
    --fsync) fsync_mode="$2"; shift ;;
    --threads) threads="$2"; shift ;;
    --no-audit) audit=0 ;;
    --dry-run) dry_run=1 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "durability: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [[ -z "$out" ]]; then
  out="bench/results/$(date -u +%Y-%m-%d)-durability"
  if [[ $dry_run == 1 ]]; then out="$out-dry-run"; fi
fi
mkdir -p "$out"

weir_bin="${WEIR_BIN:-build/release/src/app/weir}"
if [[ ! -x "$weir_bin" ]]; then
  echo "durability: building $weir_bin (release)" >&2
  cmake --preset release -DWEIR_TESTS=OFF >/dev/null
  cmake --build build/release --target weir -j2
fi
node_bin="${NODE:-node}"
if [[ ! -d tests/node/node_modules/@durable-streams/server ]]; then
  echo "durability: installing the Node reference server into tests/node" >&2
  (cd tests/node && npm install --no-audit --no-fund)
fi

if [[ -z "$threads" ]]; then
  threads=2
  if (( $(nproc) <= 2 )); then threads=1; fi
fi
weir_flags=(--threads "$threads")
if "$weir_bin" serve --help 2>&1 | grep -q -- '--fsync'; then
  weir_flags+=(--fsync "$fsync_mode")
elif [[ $dry_run == 1 ]]; then
  echo "durability: DRY RUN: $weir_bin has no --fsync (in-memory weir); figures are not a durability result" >&2
else
  echo "durability: $weir_bin serve has no --fsync flag: it is not durable yet (use --dry-run to rehearse)" >&2
  exit 1
fi

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Data on the repository's disk (not a tmpfs, where fsync would cost nothing).
work="$(mktemp -d -p "$repo/build" durability.XXXXXX)"
weir_pid=""
node_pid=""
strace_pids=()
stop_all() {
  for pid in "${strace_pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  for pid in $weir_pid $node_pid; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  weir_pid=""
  node_pid=""
  rm -rf "$work"
}
trap stop_all EXIT

cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}

wait_ready() {  # NAME PORT PID
  for _ in $(seq 1 100); do
    if ! kill -0 "$3" 2>/dev/null; then
      echo "durability: $1 exited during start-up; log:" >&2
      cat "$out/$1.log" >&2
      exit 1
    fi
    if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$2/"; then return 0; fi
    sleep 0.1
  done
  echo "durability: $1 did not answer on port $2 within 10 s" >&2
  exit 1
}

weir_port="$(free_port)"
node_port="$(free_port)"
"$weir_bin" serve --listen "127.0.0.1:$weir_port" --data-dir "$work/weir-data" ${weir_flags[@]+"${weir_flags[@]}"} \
  >"$out/weir.log" 2>&1 &
weir_pid=$!
"$node_bin" bench/reference-server.mjs "$node_port" "$work/node-data" >"$out/durable-streams.log" 2>&1 &
node_pid=$!
wait_ready weir "$weir_port" "$weir_pid"
wait_ready durable-streams "$node_port" "$node_pid"

weir_cpu0="$(cpu_seconds "$weir_pid")"
node_cpu0="$(cpu_seconds "$node_pid")"
"$weir_bin" bench \
  --target "weir=http://127.0.0.1:$weir_port" \
  --target "durable-streams=http://127.0.0.1:$node_port" \
  --concurrency 64 --throughput-secs "$secs" --latency-count 100 \
  --payload-bytes 8192 --small-payload-bytes 1024 --out "$out"
{
  echo "weir serve ${weir_flags[*]:-(no --fsync: in-memory)} (pid $weir_pid): $(awk -v a="$(cpu_seconds "$weir_pid")" -v b="$weir_cpu0" 'BEGIN{printf "%.2f", a-b}') CPU seconds during the run"
  echo "durable-streams reference server (pid $node_pid): $(awk -v a="$(cpu_seconds "$node_pid")" -v b="$node_cpu0" 'BEGIN{printf "%.2f", a-b}') CPU seconds during the run"
} >"$out/server-cpu.txt"

# fsync audit: how many fsync/fdatasync calls each server makes for a known number of appends.
audit_file="$out/fsync-audit.txt"
: >"$audit_file"
count_syncs() {  # NAME PID PORT MODE
  local name="$1" pid="$2" port="$3" mode="$4" trace="$work/strace-$1-$4.txt" stream="durability-audit-$4-$RANDOM"
  curl -s -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' "http://127.0.0.1:$port/$stream"
  strace -f -c -e trace=fsync,fdatasync,sync_file_range -p "$pid" -o "$trace" 2>/dev/null &
  local spid=$!
  strace_pids=("$spid")
  sleep 1
  head -c 8192 /dev/urandom >"$work/body"
  local appends=200
  for _ in $(seq 1 "$appends"); do
    curl -s -o /dev/null -X POST -H 'Content-Type: application/octet-stream' --data-binary @"$work/body" \
      "http://127.0.0.1:$port/$stream"
  done
  sleep 0.5
  kill -INT "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  strace_pids=()
  local syncs
  syncs="$(awk '$NF ~ /^(fsync|fdatasync|sync_file_range)$/ { n += $4 } END { print n + 0 }' "$trace")"
  echo "$name $mode appends=$appends syncs=$syncs" >>"$audit_file"
}
if [[ $audit == 1 ]] && command -v strace >/dev/null; then
  count_syncs weir "$weir_pid" "$weir_port" sequential
  count_syncs durable-streams "$node_pid" "$node_port" sequential
fi

python3 - "$out" "$dry_run" "${weir_flags[*]:-none}" <<'EOF'
import json, os, sys
out, dry, flags = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
res = json.load(open(os.path.join(out, "results.json")))
runs = {r["target"]: r for r in res["runs"] if r["concurrency"] == 64}
w, n = runs["weir"], runs["durable-streams"]
def f(x): return "n/a" if x is None else (f"{x:,.0f}" if x >= 100 else f"{x:.3g}")
ratio = w["small_req_s"] / n["small_req_s"] if n.get("small_req_s") else float("nan")
lines = []
lines.append(f"# Durability benchmark{' (DRY RUN: weir without --fsync, not a result)' if dry else ''}")
lines.append("")
lines.append(f"Command: `bench/durability/run.sh` -> `{res['command']}`")
lines.append(f"Machine: {res['machine']['cpu_model']}, {res['machine']['cpus']} CPUs, {res['machine']['kernel']}; "
             f"weir flags: {flags}; started {res['started_at']}")
lines.append("")
lines.append("| metric | weir | reference server | weir / reference |")
lines.append("|---|---|---|---|")
lines.append(f"| 1 KiB appends/s, 64 connections x 64 streams | {f(w['small_req_s'])} | {f(n['small_req_s'])} | {ratio:.1f}x |")
lines.append(f"| 8 KiB sequential append p50 (ms) | {f(w['append_p50_ms'])} | {f(n['append_p50_ms'])} | {w['append_p50_ms']/n['append_p50_ms']:.2f} |")
lines.append(f"| 8 KiB sequential append p99 (ms) | {f(w['append_p99_ms'])} | {f(n['append_p99_ms'])} | {w['append_p99_ms']/n['append_p99_ms']:.2f} |")
lines.append(f"| errors | {w['errors']} | {n['errors']} | |")
audit = os.path.join(out, "fsync-audit.txt")
if os.path.exists(audit) and os.path.getsize(audit) > 0:
    lines.append("")
    lines.append("fsync audit (strace -f -c; syncs = fsync + fdatasync + sync_file_range calls while the appends ran):")
    lines.append("")
    lines.append("| server | load | appends | syncs | appends per sync |")
    lines.append("|---|---|---|---|---|")
    for line in open(audit):
        name, mode, a, s = line.split()
        a, s = int(a.split("=")[1]), int(s.split("=")[1])
        lines.append(f"| {name} | {mode} | {a} | {s} | {a / s:.1f} |" if s else f"| {name} | {mode} | {a} | 0 | - |")
lines.append("")
lines.append(f"Targets: appends/s >= 20x the reference: {'met' if ratio >= 20 else 'NOT met'} ({ratio:.1f}x); "
             f"append p99 no worse than the reference: "
             f"{'met' if w['append_p99_ms'] <= n['append_p99_ms'] else 'NOT met'}.")
text = "\n".join(lines) + "\n"
open(os.path.join(out, "durability.md"), "w").write(text)
print(text)
EOF
cat "$out/server-cpu.txt"
stop_all
echo "durability: results in $out" >&2
