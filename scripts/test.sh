#!/usr/bin/env bash
# Installs what is missing, builds weir with ASan+UBSan and runs the whole test suite: unit and
# integration tests (GoogleTest via CTest, including the official conformance suite against
# `weir serve`), then the parser fuzzer for about a minute when clang is present.
# Set WEIR_TEST_SLOW=1 to include the tests labelled `slow`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --with-tests

preset=${WEIR_TEST_PRESET:-asan}
cmake --preset "$preset" >/dev/null
cmake --build "build/$preset" -j "$(nproc)"

fuzz_status=0
if command -v clang++ >/dev/null && [ "${WEIR_SKIP_FUZZ:-0}" != 1 ]; then
  cmake --preset fuzz >/dev/null
  cmake --build build/fuzz -j "$(nproc)" --target fuzzers
  scripts/run-fuzzers.sh build/fuzz "${WEIR_FUZZ_SECONDS:-60}" || fuzz_status=$?
fi

exclude=(-LE slow)
[ "${WEIR_TEST_SLOW:-0}" = 1 ] && exclude=()
ctest --test-dir "build/$preset" --output-on-failure -j 2 "${exclude[@]}"
exit "$fuzz_status"
