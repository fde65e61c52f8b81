#!/usr/bin/env bash
# More interleaved pairs of one configuration, the order alternating (base first, then after first).
#   run_pairs.sh BASE AFTER OUT_TSV MODE APPEND_BYTES PAIRS [SECS]
set -euo pipefail
here=$(dirname "$0")
base=$1 after=$2 out=$3 mode=$4 bytes=$5 pairs=$6 secs=${7:-12}
for r in $(seq 1 "$pairs"); do
  order=(base after); (( r % 2 == 0 )) && order=(after base)
  for b in "${order[@]}"; do
    bin=$base; [[ $b == after ]] && bin=$after
    BENCH_BIN=$after "$here/cpu_per_mib.sh" "$bin" "$b" "$mode" "$bytes" "$secs" "$out"
  done
done
