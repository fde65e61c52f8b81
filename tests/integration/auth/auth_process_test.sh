#!/usr/bin/env bash
# See CMakeLists.txt. Every process started here is stopped by its PID.
set -u
weir="$1"
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; wait "$pid" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "auth_process: $*" >&2
  exit 1
}
# Waits (at most ~10 s) for a line matching $2 in file $1: the event, not a guess at how long it takes.
wait_for_line() {
  for _ in $(seq 200); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# 1. No auth on a non-loopback address: refused before anything is created, with the reason.
timeout 10 "$weir" serve --listen 0.0.0.0:0 --data-dir "$tmp/refused" >"$tmp/refused.err" 2>&1
status=$?
[ $status -eq 1 ] || fail "expected exit status 1 without auth on 0.0.0.0, got $status"
grep -q "refusing to listen on 0.0.0.0 without access control" "$tmp/refused.err" || fail "no reason: $(cat "$tmp/refused.err")"
grep -q -- "--insecure-no-auth" "$tmp/refused.err" || fail "the message does not name --insecure-no-auth"
[ ! -e "$tmp/refused" ] || fail "the refused node created its data directory"

# 2. weir auth hash-key is sha256sum of the key without a newline.
key="wk_process-test-key"
[ "$(printf %s "$key" | "$weir" auth hash-key)" = "$(printf %s "$key" | sha256sum | cut -d' ' -f1)" ] ||
  fail "hash-key differs from sha256sum"

# 3. [[auth.api-keys]] survives --print-config.
hash=$(printf %s "$key" | sha256sum | cut -d' ' -f1)
cat >"$tmp/weir.toml" <<TOML
listen = "0.0.0.0:4437"
[[auth.api-keys]]
name = "ingest"
hash = "$hash"
scope = [{ prefix = "/v1/stream/a", ops = ["read", "write"] }]
TOML
"$weir" serve --config "$tmp/weir.toml" --print-config >"$tmp/printed.toml" || fail "--print-config failed"
grep -q "hash = \"$hash\"" "$tmp/printed.toml" || fail "the key is not printed back"
"$weir" serve --config "$tmp/printed.toml" --print-config | cmp -s - "$tmp/printed.toml" || fail "no round trip"

# 4. SIGHUP re-reads the JWKS file of a running node; SIGTERM still stops it.
echo '{"keys": []}' >"$tmp/jwks.json"
"$weir" serve --listen 127.0.0.1:0 --durable false --data-dir "$tmp/node" --jwks-file "$tmp/jwks.json" \
  --jwt-issuer https://issuer.test --jwt-audience weir >"$tmp/node.log" 2>&1 &
pid=$!
wait_for_line "$tmp/node.log" "listening on" || fail "the node did not start: $(cat "$tmp/node.log")"
grep -q "access control on: 0 API keys, JWTs $tmp/jwks.json (0 keys)" "$tmp/node.log" || fail "no auth line"
cat >"$tmp/jwks.json" <<'JSON'
{"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k1", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}
JSON
kill -HUP "$pid"
wait_for_line "$tmp/node.log" "SIGHUP: reloaded $tmp/jwks.json (1 keys)" || fail "no reload: $(cat "$tmp/node.log")"
echo "not json" >"$tmp/jwks.json"
kill -HUP "$pid"
wait_for_line "$tmp/node.log" "the previous keys stay in force" || fail "a bad file was not reported"
kill -0 "$pid" 2>/dev/null || fail "SIGHUP stopped the node"
kill -TERM "$pid"
wait "$pid"
status=$?
pid=""
[ $status -eq 0 ] || fail "the node did not stop cleanly after SIGTERM (status $status)"
# 5. weir stream against a node with an API key: refused without the token, served with WEIR_TOKEN.
cat >"$tmp/keys.toml" <<TOML
[[auth.api-keys]]
name = "cli"
hash = "$hash"
scope = [{ prefix = "/v1/stream/cli", ops = ["read", "write"] }]
TOML
"$weir" serve --config "$tmp/keys.toml" --listen 127.0.0.1:0 --durable false --data-dir "$tmp/node2" \
  >"$tmp/node2.log" 2>&1 &
pid=$!
wait_for_line "$tmp/node2.log" "listening on" || fail "the second node did not start: $(cat "$tmp/node2.log")"
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/node2.log" | head -1)
server="http://127.0.0.1:$port/v1/stream"
env -u WEIR_TOKEN "$weir" stream --server "$server" create cli/s >"$tmp/cli.out" 2>&1
status=$?
[ $status -ne 0 ] || fail "a create without a token succeeded"
grep -q "401" "$tmp/cli.out" || fail "the refusal does not say 401: $(cat "$tmp/cli.out")"
WEIR_TOKEN="$key" "$weir" stream --server "$server" create cli/s >"$tmp/cli.out" 2>&1 || fail "create with the token: $(cat "$tmp/cli.out")"
WEIR_TOKEN="$key" "$weir" stream --server "$server" append cli/s hello >"$tmp/cli.out" 2>&1 || fail "append: $(cat "$tmp/cli.out")"
[ "$(WEIR_TOKEN="$key" "$weir" stream --server "$server" read cli/s)" = "hello" ] || fail "read with the token"
WEIR_TOKEN="$key" "$weir" stream --server "$server" delete cli/s >"$tmp/cli.out" 2>&1
[ $? -ne 0 ] || fail "a delete without the delete grant succeeded"
grep -q "$key" "$tmp/node2.log" && fail "the key is in the node's log"
kill -TERM "$pid"
wait "$pid"
status=$?
pid=""
[ $status -eq 0 ] || fail "the second node did not stop cleanly (status $status)"
echo "auth_process: all checks passed"
