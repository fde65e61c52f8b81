#!/usr/bin/env bash
# Interleaved A/B: base (the tree without the copy changes) and after, cluster and single node, 64 KiB and
# 256 B appends, ROUNDS rounds. Results: one TSV line per run (cpu_per_mib.sh).
set -euo pipefail
here=$(dirname "$0")
base=$1 after=$2 out=$3 rounds=${4:-2} secs=${5:-12}
printf 'time\tbinary\tmode\tappend_bytes\tappends\tMiB\tMiB/s\tcpu_s_per_process\tcpu_ms_per_MiB\tdisk_bytes_per_appended_byte\n' >"$out"
for r in $(seq 1 "$rounds"); do
  for mode in cluster single; do
    for bytes in 65536 256; do
      for b in base after; do
        bin=$base; [[ $b == after ]] && bin=$after
        BENCH_BIN=$after "$here/cpu_per_mib.sh" "$bin" "$b" "$mode" "$bytes" "$secs" "$out"
      done
    done
  done
done
