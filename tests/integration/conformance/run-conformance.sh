#!/usr/bin/env bash
# The official Durable Streams conformance suite (subscriptions on) against a fresh `weir serve`.
# Usage: run-conformance.sh WEIR_BINARY TESTS_NODE_DIR [extra serve flags...]
set -u
weir_bin="$1"
node_dir="$2"
shift 2
. "$node_dir/weir_node.sh"

# The suite points its webhooks at http://127.0.0.1 (PROTOCOL.md 6.2 development exception).
weir_start "$weir_bin" --long-poll-timeout-ms 500 --allow-loopback-webhooks true "$@" || exit 1

cd "$node_dir"
CONFORMANCE_TEST_URL="$WEIR_URL" CONFORMANCE_SUBSCRIPTIONS=1 CONFORMANCE_LONG_POLL_MS=500 \
  npx vitest run --config vitest.conformance.config.mjs --reporter=dot
suite=$?

weir_stop
stopped=$?
if [ $suite -ne 0 ]; then
  echo "conformance: the suite failed (status $suite)" >&2
  exit 1
fi
if [ $stopped -ne 0 ]; then
  echo "conformance: weir crashed or did not stop cleanly" >&2
  exit 1
fi
echo "conformance: all tests passed"
