#!/usr/bin/env bash
# Installs what is missing, builds weir (release) and starts one node with its embedded defaults:
# 127.0.0.1:4437, data in ./weir-data. Extra arguments go to `weir serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release -DWEIR_TESTS=OFF >/dev/null
cmake --build build/release --target weir
exec build/release/src/app/weir serve "$@"
