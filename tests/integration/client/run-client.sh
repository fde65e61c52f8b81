#!/usr/bin/env bash
# The official TypeScript client (@durable-streams/client) against a fresh `weir serve`.
# Usage: run-client.sh WEIR_BINARY TESTS_NODE_DIR [extra serve flags...]
set -u
weir_bin="$1"
node_dir="$2"
shift 2
. "$node_dir/weir_node.sh"

weir_start "$weir_bin" "$@" || exit 1
cd "$node_dir"
WEIR_URL="$WEIR_URL" npx vitest run --config vitest.client.config.mjs
suite=$?
weir_stop
stopped=$?
[ $suite -eq 0 ] || { echo "client: tests failed" >&2; exit 1; }
[ $stopped -eq 0 ] || { echo "client: weir crashed or did not stop cleanly" >&2; exit 1; }
echo "client: all tests passed"
