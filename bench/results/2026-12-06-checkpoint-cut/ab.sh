#!/usr/bin/env bash
# Same-run A/B of checkpoints on and off the loop: two weirs (before, after) on CPU 0, generator on CPU 1.
# ab.sh BEFORE_BIN AFTER_BIN ROUNDS OUTDIR
set -euo pipefail
before=$1 after=$2 rounds=$3 out=$4
mkdir -p "$out"
bench=${BENCH_BIN:-build/release/src/app/weir}
start() {  # name bin port
  rm -rf /tmp/ckab/data-$1; mkdir -p /tmp/ckab/data-$1
  taskset -c 0 "$2" serve --threads 1 --fsync always --checkpoint-bytes ${CKB:-67108864} --listen 127.0.0.1:$3 \
    --data-dir /tmp/ckab/data-$1 > "$out/$1-serve.log" 2>&1 &
  echo $!
}
pb=$(start before "$before" 18601); pa=$(start after "$after" 18602)
trap 'kill $pb $pa 2>/dev/null; wait 2>/dev/null; rm -rf /tmp/ckab/data-*' EXIT
sleep 1
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then order="before after"; else order="after before"; fi
  for t in $order; do
    port=18601; pid=$pb; [[ $t == after ]] && { port=18602; pid=$pa; }
    echo "== round $r $t" >> "$out/rounds.txt"
    taskset -c 1 "$bench" bench --target "$t=http://127.0.0.1:$port" --server-pid "$t=$pid" --workloads saturation \
      --sat-streams 10000 --sat-connections 256 --sat-secs ${SECS:-20} --sat-warmup-secs 2 --sat-plateau 1 \
      --append-bytes 256 --settle-secs 0 --out "$out/r$r-$t" > "$out/r$r-$t.txt" 2>&1 || echo "bench failed" >> "$out/rounds.txt"
    grep -E "^\| *10,?000" "$out/r$r-$t/results.md" >> "$out/rounds.txt" 2>/dev/null || true
  done
done
curl -s http://127.0.0.1:18601/metrics | grep -E "loop_lag" > "$out/before-metrics.txt" || true
curl -s http://127.0.0.1:18602/metrics | grep -E "loop_lag" > "$out/after-metrics.txt" || true
