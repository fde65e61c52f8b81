#!/usr/bin/env bash
# bench/durability/restart.sh: how weir restarts and how much memory it uses once it holds a lot of
# data (docs/benchmarks.md, section "Restart and memory").
#
#   bench/durability/restart.sh [--gib N] [--streams N] [--body-bytes N] [--keep] [--data-dir DIR]
#
# Starts a release `weir serve --fsync always` on a fresh data directory, fills it with N GiB (default 10)
# of 256 KiB appends spread over 64 streams (wrk + bench/durability/fill.lua, 16 connections), then:
#   - RSS of the full node (VmRSS, VmHWM from /proc);
#   - stops it (SIGTERM), starts it again and times the restart: from exec to the first 200 of /healthz,
#     and the recovery time weir logs itself;
#   - RSS after restart, then after reading every stream once from the start in 4 MiB chunks (all of it
#     cold: from the segment files) and checking each stream's length against what was appended;
#   - the data directory's size.
# Prints a table and writes DIR/restart.md. There is no peer here: the Node reference server keeps
# every stream in memory (it could not hold 10 GiB), so only weir's own targets are checked:
# restart < 5 s, RSS < 1 GiB.
# Env: WEIR_BIN (default build/release/src/app/weir, built if missing).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"

gib=10
streams=64
body=262144
keep=0
data_dir=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --gib) gib="$2"; shift ;;
    --streams) streams="$2"; shift ;;
    --body-bytes) body="$2"; shift ;;
    --keep) keep=1 ;;
    --data-dir) data_dir="$2"; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "restart: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
out="bench/results/$(date -u +%Y-%m-%d)-restart"
mkdir -p "$out"
weir_bin="${WEIR_BIN:-build/release/src/app/weir}"
if [[ ! -x "$weir_bin" ]]; then
  cmake --preset release -DWEIR_TESTS=OFF >/dev/null
  cmake --build build/release --target weir -j2
fi
[[ -n "$data_dir" ]] || data_dir="$(mktemp -d /var/tmp/weir-restart.XXXXXX)"
port=$((20000 + RANDOM % 20000))
base="http://127.0.0.1:$port"
pid=""
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then kill "$pid"; wait "$pid" 2>/dev/null || true; fi
  if [[ $keep == 0 ]]; then rm -rf "$data_dir"; fi
}
trap cleanup EXIT

rss_mib() { awk -v k="$2:" '$1 == k { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }
# Catch-up reads in 4 MiB chunks, so that reading everything back takes a few thousand requests.
printf 'read_chunk_bytes = 4194304\n' >"$out/weir.toml"
start_node() {
  local began; began=$(date +%s%N)
  "$weir_bin" serve --config "$out/weir.toml" --listen "127.0.0.1:$port" --data-dir "$data_dir" --threads 2 \
    --fsync always --log-level info >>"$out/weir.log" 2>&1 &
  pid=$!
  until curl -sf "$base/healthz" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { echo "restart: weir exited; see $out/weir.log" >&2; exit 1; }
    sleep 0.01
  done
  started_secs=$(awk -v a="$began" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
}
stop_node() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }

: >"$out/weir.log"
start_node
for ((i = 0; i < streams; i++)); do
  curl -sf -X PUT -H 'Content-Type: application/octet-stream' "$base/v1/stream/fill-$i" -o /dev/null
done
target=$((gib * 1024 * 1024 * 1024))
echo "restart: filling $gib GiB into $data_dir" >&2
fill_began=$(date +%s)
last_total=-1
while :; do
  total=0
  for ((i = 0; i < streams; i++)); do
    n=$(curl -sfI "$base/v1/stream/fill-$i" | tr -d '\r' | awk -F_ '/^[Ss]tream-[Nn]ext-[Oo]ffset/ {print $2+0}')
    total=$((total + n))
  done
  (( total >= target )) && break
  if (( total == last_total )); then echo "restart: the fill makes no progress; see $out/wrk.txt" >&2; exit 1; fi
  last_total=$total
  # Short rounds, so the fill overshoots the target by little (at most a few seconds of appends).
  left=$(( (target - total) / (400 * 1024 * 1024) + 1 ))
  WEIR_FILL_STREAMS=$streams WEIR_FILL_BYTES=$body wrk -t2 -c16 -d"$(( left < 10 ? left : 10 ))s" \
    -s bench/durability/fill.lua "$base" >"$out/wrk.txt" 2>&1 || true
done
fill_secs=$(( $(date +%s) - fill_began ))
appended_gib=$(awk -v t="$total" 'BEGIN { printf "%.2f", t / 1073741824 }')
full_rss=$(rss_mib "$pid" VmRSS)
full_hwm=$(rss_mib "$pid" VmHWM)
stop_node
disk=$(du -sh "$data_dir" | cut -f1)
sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true  # cold page cache when allowed (root)
start_node
restart_secs=$started_secs
recovered=$(grep 'recovered in' "$out/weir.log" | tail -1 | sed 's/.*recovered in \([0-9.]*\) s.*/\1/')
after_rss=$(rss_mib "$pid" VmRSS)
bad=0
for ((i = 0; i < streams; i++)); do
  want=$(curl -sfI "$base/v1/stream/fill-$i" | tr -d '\r' | awk -F_ '/^[Ss]tream-[Nn]ext-[Oo]ffset/ {print $2+0}')
  got=0; off=-1
  while :; do
    hdr=$(curl -s -D - -o /tmp/weir-restart-body.$$ "$base/v1/stream/fill-$i?offset=$off" | tr -d '\r')
    got=$((got + $(stat -c %s /tmp/weir-restart-body.$$)))
    off=$(echo "$hdr" | awk '/^[Ss]tream-[Nn]ext-[Oo]ffset/ {print $2}')
    echo "$hdr" | grep -qi '^stream-up-to-date' && break
  done
  [[ $got == "$want" ]] || { echo "restart: fill-$i read $got bytes, expected $want" >&2; bad=$((bad + 1)); }
done
rm -f /tmp/weir-restart-body.$$
read_rss=$(rss_mib "$pid" VmRSS)
read_hwm=$(rss_mib "$pid" VmHWM)
stop_node

{
  echo "| measure | value |"
  echo "|---|---|"
  echo "| data appended | $appended_gib GiB (target $gib) in ${body}-byte appends over $streams streams ($fill_secs s, fsync always) |"
  echo "| data directory | $disk |"
  echo "| RSS when full (VmRSS / VmHWM) | $full_rss / $full_hwm MiB |"
  echo "| restart: exec to first /healthz 200 | $restart_secs s |"
  echo "| restart: recovery as logged | $recovered s |"
  echo "| RSS after restart | $after_rss MiB |"
  echo "| RSS after reading everything once (VmRSS / VmHWM) | $read_rss / $read_hwm MiB |"
  echo "| streams whose length did not match | $bad |"
} | tee "$out/restart.md"
[[ $bad == 0 ]]
