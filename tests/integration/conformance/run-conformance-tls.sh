#!/usr/bin/env bash
# The official conformance suite over HTTPS: `weir serve --tls-cert/--tls-key` with a CA and a leaf made
# here by the openssl CLI (keys only in a temporary directory), and Node trusting that CA through
# NODE_EXTRA_CA_CERTS. Usage: run-conformance-tls.sh WEIR_BINARY TESTS_NODE_DIR [extra serve flags...]
set -u
here="$(cd "$(dirname "$0")" && pwd)"
certs="$(mktemp -d "${TMPDIR:-/tmp}/weir-tls-conf.XXXXXX")"
trap 'rm -rf "$certs"' EXIT
(
  cd "$certs" || exit 1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
    -days 2 -subj "/CN=weir conformance CA" &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr \
      -subj "/CN=127.0.0.1" &&
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >ext &&
    openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -set_serial 0x5151 -days 2 -extfile ext -out leaf.pem
) >/dev/null 2>&1 || {
  echo "conformance-tls: could not make test certificates with openssl" >&2
  exit 1
}
export WEIR_SCHEME=https WEIR_CA="$certs/ca.pem" NODE_EXTRA_CA_CERTS="$certs/ca.pem"
bash "$here/run-conformance.sh" "$1" "$2" --tls-cert "$certs/leaf.pem" --tls-key "$certs/leaf.key" "${@:3}"
