#!/usr/bin/env bash
# The browser tests (tests/node/browser_test.mjs, browser_h2_test.mjs): Debian's chromium driven by
# puppeteer-core against `weir serve` with access control, TLS and cors-allowed-origins, the example
# pages of examples/browser/ on another origin. Needs the openssl CLI (test certificates).
# Usage: run-browser.sh WEIR_BINARY TESTS_NODE_DIR OUT_DIR [SCRIPT (browser_test.mjs)]
set -u
weir_bin="$1"
node_dir="$2"
out_dir="$3"
script="${4:-browser_test.mjs}"
if [ ! -x /usr/bin/chromium ]; then
  echo "browser: /usr/bin/chromium is missing: apt-get install -y chromium (scripts/install-deps.sh)" >&2
  exit 1
fi
mkdir -p "$out_dir"
cd "$node_dir" || exit 1
exec node "$script" --weir "$weir_bin" --out "$out_dir" --chromium /usr/bin/chromium
