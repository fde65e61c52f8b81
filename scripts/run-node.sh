#!/usr/bin/env bash
# Installs what is missing, builds weir (release) and starts one node with its embedded defaults:
# 127.0.0.1:4437, data in ./weir-data. Extra arguments go to `weir serve`.
#
# With --with-s3 as the first argument, the node also gets a cold tier (docs/cold-tier.md) on a local
# S3-compatible server: s3rver from tests/node (npm), on 127.0.0.1:4568 with its files in ./weir-s3,
# bucket `weir`, stopped with the node. A small cold-keep-bytes (64 MiB) makes the tier visible soon: see
# `weir_tier_*` in http://127.0.0.1:4437/metrics and the objects under ./weir-s3/files.
set -euo pipefail
cd "$(dirname "$0")/.."
with_s3=false
if [ "${1:-}" = "--with-s3" ]; then
  with_s3=true
  shift
  scripts/install-deps.sh --with-tests
else
  scripts/install-deps.sh
fi
cmake --preset release -DWEIR_TESTS=OFF >/dev/null
cmake --build build/release --target weir
if ! $with_s3; then
  exec build/release/src/app/weir serve "$@"
fi

. tests/integration/s3/s3rver.sh
s3rver_start "$PWD/weir-s3" weir 4568
trap s3rver_stop EXIT
echo "s3rver (pid $S3RVER_PID) on http://127.0.0.1:4568, bucket weir, files in ./weir-s3/files"
AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER build/release/src/app/weir serve \
  --cold s3://weir/node --s3-endpoint http://127.0.0.1:4568 --local-bytes 268435456 \
  --cold-keep-bytes 67108864 "$@"
