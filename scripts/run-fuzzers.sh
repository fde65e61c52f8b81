#!/usr/bin/env bash
# Runs every libFuzzer target built in BUILD_DIR for SECONDS in all (split evenly), each on its
# corpus in tests/fuzz/corpus/<target>. Exits non-zero if a fuzzer finds a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?build dir}; secs=${2:-60}
mapfile -t targets < <(find "$build/tests/fuzz" -maxdepth 1 -type f -executable -name '*_fuzz' 2>/dev/null | sort)
[ ${#targets[@]} -eq 0 ] && { echo "run-fuzzers: no fuzz targets in $build"; exit 0; }
per=$(( secs / ${#targets[@]} )); [ "$per" -lt 5 ] && per=5
for t in "${targets[@]}"; do
  name=$(basename "$t")
  corpus=tests/fuzz/corpus/$name
  work=$(mktemp -d)
  cp -r "$corpus"/. "$work"/ 2>/dev/null || true
  echo "run-fuzzers: $name for ${per}s"
  "$t" -max_total_time="$per" -print_final_stats=1 -artifact_prefix="$work/" "$work" >"$work.log" 2>&1 || {
    echo "run-fuzzers: $name FAILED"; tail -40 "$work.log"; exit 1; }
  grep -E 'stat::number_of_executed_units' "$work.log" || true
  rm -rf "$work" "$work.log"
done
