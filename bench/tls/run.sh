#!/usr/bin/env bash
# What TLS costs: `weir serve` over plain HTTP against the same binary with --tls-cert/--tls-key (and,
# with BEFORE=PATH, a binary built before the transport seam, over plain HTTP), taking turns within every
# round. Server on CPU 0 with one thread, wrk on CPU 1 (wrk speaks https; sessions are kept alive, so
# the handshake is paid once per connection). Cases:
#   healthz-pipelined: GET /healthz, 16 requests per write on 16 connections (one SSL_read and one
#                      SSL_write per batch of 16);
#   append-fsync:      POST 256 B to one stream on 64 connections, --fsync always (acknowledged after
#                      fdatasync: what a durable append costs end to end);
#   append-interval:   the same with --fsync interval:100 (appends not bound by the disk).
# Reports req/s and server CPU microseconds per request (utime+stime from /proc/PID/stat over the run /
# requests wrk completed); the summary gives medians over rounds. Certificates (P-256) are made here.
#
#   read-pipelined:    GET of a small stream (catch-up), 16 requests per write on 16 connections: the
#                      per-request cost of access control, which /healthz does not pay.
# With VARIANTS="bare ops" (docs/benchmarks.md, "Everything on against everything off"): `bare` is plain HTTP
# with --metrics false; `ops` is TLS + an API key checked on every request (Authorization: Bearer) +
# metrics on.
#
#   bench/tls/run.sh                                  # ROUNDS=3 DURATION=8
#   BEFORE=/tmp/weir-before ROUNDS=5 bench/tls/run.sh
#   VARIANTS="bare ops" CASES="read-pipelined append-fsync append-interval" bench/tls/run.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
WEIR=${WEIR:-$root/build/release/src/app/weir}
DURATION=${DURATION:-8}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18091}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
CASES=${CASES:-"healthz-pipelined append-fsync append-interval"}
VARIANTS=${VARIANTS:-"plain tls"}
[[ -n "${BEFORE:-}" ]] && VARIANTS="before plain tls"

hz=$(getconf CLK_TCK)
tmp=$(mktemp -d /tmp/weir-tls-bench.XXXXXX)
pid=""
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

(
  cd "$tmp"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 \
    -subj "/CN=weir bench CA"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr \
    -subj "/CN=127.0.0.1"
  printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > ext
  openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -set_serial 0x42 -days 2 -extfile ext -out leaf.pem
) > /dev/null 2>&1
# The `ops` variant's API key: weir keeps only its hash, in a config file.
api_key=$("$WEIR" auth gen-key 2>/dev/null | grep -m1 '^wk_')
printf '[[auth.api-keys]]\nname = "bench"\nhash = "%s"\nscope = [{ prefix = "/", ops = ["read", "write", "delete", "admin"] }]\n' \
  "$(printf %s "$api_key" | sha256sum | cut -d' ' -f1)" > "$tmp/auth.toml"
auth_args() { [[ "$1" == ops ]] && printf '%s\n' -H "Authorization: Bearer $api_key"; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

scheme() { [[ "$1" == tls || "$1" == ops ]] && echo https || echo http; }

start_server() {  # variant case
  local bin=$WEIR flags=()
  [[ "$1" == before ]] && bin=$BEFORE
  [[ "$1" == tls ]] && flags=(--tls-cert "$tmp/leaf.pem" --tls-key "$tmp/leaf.key")
  [[ "$1" == ops ]] && flags=(--tls-cert "$tmp/leaf.pem" --tls-key "$tmp/leaf.key" --config "$tmp/auth.toml")
  [[ "$1" == bare ]] && flags=(--metrics false)
  local fsync=interval:100
  [[ "$2" == append-fsync ]] && fsync=always
  rm -rf "$tmp/data"
  taskset -c "$SERVER_CPU" "$bin" serve --listen "127.0.0.1:$PORT" --threads 1 --data-dir "$tmp/data" \
    --fsync "$fsync" --log-level warn "${flags[@]}" > "$tmp/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do
    curl -sf --cacert "$tmp/ca.pem" "$(scheme "$1")://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && return 0
    sleep 0.05  # polling for the listener to come up
  done
  echo "weir did not start: $(cat "$tmp/serve.log")" >&2
  exit 1
}

stop_server() {
  kill -TERM "$pid"
  wait "$pid" || true
  pid=""
}

run_case() {  # case variant -> prints "req/s us/req"
  local base url args script_arg
  base="$(scheme "$2")://127.0.0.1:$PORT"
  case "$1" in
    healthz-pipelined)
      url="$base/healthz"; args=(-c16 -s "$root/bench/http/pipeline.lua"); script_arg=16 ;;
    read-pipelined)
      local -a hdr
      mapfile -t hdr < <(auth_args "$2")
      curl -sf --cacert "$tmp/ca.pem" "${hdr[@]}" -X PUT -H 'Content-Type: text/plain' --data-binary 'small stream' \
        "$base/v1/stream/bench" > /dev/null
      url="$base/v1/stream/bench?offset=-1"; args=(-c16 -s "$root/bench/http/pipeline.lua"); script_arg=16 ;;
    append-*)
      local -a hdr
      mapfile -t hdr < <(auth_args "$2")
      curl -sf --cacert "$tmp/ca.pem" "${hdr[@]}" -X PUT -H 'Content-Type: text/plain' "$base/v1/stream/bench" > /dev/null
      url="$base/v1/stream/bench"; args=(-c64 -s "$root/bench/metrics/append.lua"); script_arg=256 ;;
  esac
  local before after out
  before=$(cpu_ticks "$pid")
  local -a auth
  mapfile -t auth < <(auth_args "$2")
  out=$(taskset -c "$CLIENT_CPU" wrk -t1 "${args[@]}" "${auth[@]}" -d"${DURATION}s" "$url" -- "$script_arg" 2>&1)
  after=$(cpu_ticks "$pid")
  local reqs rps
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  if echo "$out" | grep -q "Non-2xx\|Socket errors"; then echo "errors in $1/$2: $out" >&2; exit 1; fi
  awk -v r="$rps" -v n="$reqs" -v t=$((after - before)) -v hz="$hz" \
    'BEGIN { printf "%.0f %.3f\n", r, t / hz * 1e6 / n }'
}

echo "# weir TLS cost: $(date -u '+%Y-%m-%d %H:%M UTC'), $ROUNDS rounds x ${DURATION}s, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $WEIR ($("$WEIR" --version 2>/dev/null | head -1))"
[[ -n "${BEFORE:-}" ]] && echo "# before: $BEFORE ($("$BEFORE" --version 2>/dev/null | head -1))"
results="$tmp/results"
: > "$results"
for round in $(seq 1 "$ROUNDS"); do
  for c in $CASES; do
    for v in $VARIANTS; do
      start_server "$v" "$c"
      read -r rps us < <(run_case "$c" "$v")
      stop_server
      echo "round $round  $c  $v  $rps req/s  $us us/req"
      echo "$c $v $rps $us" >> "$results"
    done
  done
done
echo
echo "| case | variant | req/s (median) | server CPU us/req (median) |"
echo "|---|---|---|---|"
for c in $CASES; do
  for v in $VARIANTS; do
    median() { awk -v c="$c" -v v="$v" -v f="$1" '$1 == c && $2 == v { print $f }' "$results" | sort -g |
      awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
    echo "| $c | $v | $(median 3) | $(median 4) |"
  done
done
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
