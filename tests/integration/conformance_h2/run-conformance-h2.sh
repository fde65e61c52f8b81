#!/usr/bin/env bash
# The official Durable Streams conformance suite (subscriptions on) over HTTP/2 against a fresh
# `weir serve`: h2c with prior knowledge on the plain port, or h2 over TLS chosen by ALPN (a CA and a
# leaf made here by the openssl CLI, trusted by Node through NODE_EXTRA_CA_CERTS).
# Usage: run-conformance-h2.sh h2c|h2 WEIR_BINARY TESTS_NODE_DIR [extra serve flags...]
set -u
mode="$1"
weir_bin="$2"
node_dir="$3"
shift 3
. "$node_dir/weir_node.sh"

tls_flags=()
if [ "$mode" = h2 ]; then
  certs="$(mktemp -d "${TMPDIR:-/tmp}/weir-h2-conf.XXXXXX")"
  trap 'rm -rf "$certs"' EXIT
  (
    cd "$certs" || exit 1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
      -days 2 -subj "/CN=weir h2 conformance CA" &&
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr \
        -subj "/CN=127.0.0.1" &&
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >ext &&
      openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -set_serial 0x5252 -days 2 -extfile ext -out leaf.pem
  ) >/dev/null 2>&1 || {
    echo "conformance-h2: could not make test certificates with openssl" >&2
    exit 1
  }
  export WEIR_SCHEME=https WEIR_CA="$certs/ca.pem" NODE_EXTRA_CA_CERTS="$certs/ca.pem"
  tls_flags=(--tls-cert "$certs/leaf.pem" --tls-key "$certs/leaf.key")
elif [ "$mode" != h2c ]; then
  echo "usage: run-conformance-h2.sh h2c|h2 WEIR_BINARY TESTS_NODE_DIR [serve flags...]" >&2
  exit 2
fi

# The suite points its webhooks at http://127.0.0.1 (PROTOCOL.md 6.2 development exception).
weir_start "$weir_bin" --long-poll-timeout-ms 500 --allow-loopback-webhooks true "${tls_flags[@]}" "$@" || exit 1

# The server speaks the protocol asked for (curl reports the version it used).
curl_flags=(--http2-prior-knowledge)
[ "$mode" = h2 ] && curl_flags=(--http2 --cacert "$WEIR_CA")
version="$(curl -sS -o /dev/null -w '%{http_version}' "${curl_flags[@]}" "$WEIR_URL/healthz")"
if [ "$version" != 2 ]; then
  echo "conformance-h2: curl spoke HTTP/$version to weir, not HTTP/2" >&2
  weir_stop
  exit 1
fi

cd "$node_dir"
WEIR_H2="$mode" CONFORMANCE_TEST_URL="$WEIR_URL" CONFORMANCE_SUBSCRIPTIONS=1 CONFORMANCE_LONG_POLL_MS=500 \
  npx vitest run --config vitest.conformance.h2.config.mjs --reporter=dot
suite=$?

weir_stop
stopped=$?
if [ $suite -ne 0 ]; then
  echo "conformance-h2 ($mode): the suite failed (status $suite)" >&2
  exit 1
fi
if [ $stopped -ne 0 ]; then
  echo "conformance-h2 ($mode): weir crashed or did not stop cleanly" >&2
  exit 1
fi
echo "conformance-h2 ($mode): all tests passed"
