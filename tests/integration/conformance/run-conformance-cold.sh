#!/usr/bin/env bash
# The official conformance suite against a node whose data lives mostly in a bucket: `weir serve --cold`
# on s3rver (npm, tests/node), keeping so little on its disk that a shard drops what it uploaded within a
# fraction of a second.
# Usage: run-conformance-cold.sh WEIR_BINARY TESTS_NODE_DIR [extra serve flags...]
set -u
weir_bin="$1"
node_dir="$2"
shift 2
. "$node_dir/weir_node.sh"
. "$(dirname "$0")/../s3/s3rver.sh"

s3_dir="$(mktemp -d "${TMPDIR:-/tmp}/weir-s3rver.XXXXXX")"
stop_s3() {
  s3rver_stop
  rm -rf "$s3_dir"
}
if ! s3rver_start "$s3_dir" weir-conformance; then
  rm -rf "$s3_dir"
  exit 1
fi
s3_port="$S3RVER_PORT"

# Objects of 64 KiB, sent after 50 ms; past 64 KiB held per shard, what is in the bucket is dropped from
# the disk (cold-keep-bytes), so reads of older bytes go to the bucket.
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
if ! weir_start "$weir_bin" --long-poll-timeout-ms 500 --allow-loopback-webhooks true \
  --cold s3://weir-conformance/node --s3-endpoint "http://127.0.0.1:$s3_port" --local-bytes 67108864 \
  --cold-keep-bytes 131072 --segment-bytes 65536 --cold-object-bytes 65536 --hot-bytes 65536 \
  --cold-max-age-ms 50 "$@"; then
  stop_s3
  exit 1
fi

cd "$node_dir"
CONFORMANCE_TEST_URL="$WEIR_URL" CONFORMANCE_SUBSCRIPTIONS=1 CONFORMANCE_LONG_POLL_MS=500 \
  npx vitest run --config vitest.conformance.config.mjs --reporter=dot
suite=$?

# What the tier did meanwhile (its /metrics): objects uploaded, bytes dropped, reads from the bucket.
tier="$(curl -fsS "$WEIR_URL/metrics" | grep -E '^weir_tier_(objects_uploaded|dropped_bytes|bucket_reads|bucket_read_failures)_total ' | tr '\n' ' ')"
weir_stop
stopped=$?
stop_s3
if [ $suite -ne 0 ]; then
  echo "conformance_cold: the suite failed (status $suite)" >&2
  exit 1
fi
if [ $stopped -ne 0 ]; then
  echo "conformance_cold: weir crashed or did not stop cleanly" >&2
  exit 1
fi
echo "conformance_cold: all tests passed; tier: $tier"
# The suite reads what it wrote at once, before the tier moved it, so most of its reads are served
# locally (tests/integration/s3/cold_node_test.cc reads megabytes back from the bucket); what this run
# checks is that uploading and dropping under the whole protocol changes no answer.
case "$tier" in
  *"weir_tier_objects_uploaded_total 0 "*|*"weir_tier_dropped_bytes_total 0 "*|"")
    echo "conformance_cold: nothing was uploaded or dropped: the test did not test the tier" >&2
    exit 1 ;;
esac
