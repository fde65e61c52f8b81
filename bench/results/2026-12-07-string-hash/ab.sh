#!/usr/bin/env bash
# A/B of two weir builds at saturation: both pinned to CPU 0 (--threads 1 --fsync always), the
# generator on CPU 1, `weir bench --workloads saturation` against both, order alternating by round.
# Usage: ab.sh OUT ROUNDS STREAMS CONNECTIONS A=BIN B=BIN (the generator is the last build's weir bench)
set -euo pipefail
out="$1" rounds="$2" streams="$3" conns="$4"; shift 4
mkdir -p "$out"
tmp="$(mktemp -d /tmp/weir-ab.XXXXXX)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
declare -A pid url
port=5241
names=()
for b in "$@"; do
  n="${b%%=*}" bin="${b#*=}"
  taskset -c 0 "$bin" serve --listen "127.0.0.1:$port" --data-dir "$tmp/$n" --threads 1 --fsync always >"$tmp/$n.log" 2>&1 &
  pids+=($!); pid[$n]=$!; url[$n]="http://127.0.0.1:$port/v1/stream"; names+=("$n")
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  port=$((port + 1))
done
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order=("${names[@]}"); else order=("${names[1]}" "${names[0]}"); fi
  args=()
  for n in "${order[@]}"; do args+=(--target "$n=${url[$n]}" --server-pid "$n=${pid[$n]}"); done
  taskset -c 1 "${bin}" bench "${args[@]}" --workloads saturation --sat-streams "$streams" --sat-connections "$conns" \
    --sat-secs 10 --sat-warmup-secs 2 --out "$out/round-$r" 2>&1 | grep -v "^\[" | tail -4
  grep -A12 "aturation" "$out/round-$r/results.md" | head -30 > "$out/round-$r.txt" || true
done
