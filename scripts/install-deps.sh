#!/usr/bin/env bash
# Installs what weir needs on Debian 12 (as root): the build toolchain and libraries from apt, and the
# test tools and peers from npm (pinned by tests/node/package-lock.json). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_BUILD=(build-essential g++ cmake ninja-build pkg-config git
  liburing-dev libsimdjson-dev libisal-dev libssl-dev libcurl4-openssl-dev libtomlplusplus-dev
  libcli11-dev libfmt-dev libspdlog-dev libjemalloc-dev libraft-dev libnghttp2-dev)
APT_TEST=(libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev lld wrk nginx-light
  nodejs npm curl procps util-linux redis-server redis-tools dpkg-dev file python3-prometheus-client
  chromium nghttp2-client)  # the browser test (tests/node/browser_test.mjs) drives it with puppeteer-core

want=("${APT_BUILD[@]}")
[ "${1:-}" = "--with-tests" ] && want+=("${APT_TEST[@]}")

missing=()
for p in "${want[@]}"; do
  # nodejs/npm may come from elsewhere (Node 20 preinstalled): skip them when the commands exist.
  if [ "$p" = nodejs ] && command -v node >/dev/null; then continue; fi
  if [ "$p" = npm ] && command -v npm >/dev/null; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "${1:-}" = "--with-tests" ]; then
  (cd tests/node && npm install --no-audit --no-fund --loglevel=error)
fi
