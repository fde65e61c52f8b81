# Shared by the shell scripts that need a local S3-compatible server (scripts/run-node.sh --with-s3,
# the conformance_cold test, bench/cold/run.sh): s3rver (s3rver.mjs beside this file, npm from
# tests/node) on 127.0.0.1. Source it, then:
#   s3rver_start DATA_DIR BUCKET [PORT]   -> sets S3RVER_PID and S3RVER_PORT (PORT 0 or absent: the OS picks)
#   s3rver_stop                           -> SIGTERM by PID, waits for it
s3rver_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

s3rver_start() {
  local data="$1" bucket="$2" port="${3:-0}"
  mkdir -p "$data"
  S3RVER_OUT="$data/s3rver.out"
  node --openssl-legacy-provider "$s3rver_here/s3rver.mjs" "$s3rver_here/../../node" "$data/files" "$bucket" \
    "$port" >"$S3RVER_OUT" 2>&1 &
  S3RVER_PID=$!
  S3RVER_PORT=""
  local i
  for i in $(seq 1 100); do  # up to 10 s
    S3RVER_PORT="$(sed -n 's/^port \([0-9][0-9]*\)$/\1/p' "$S3RVER_OUT" | head -n 1)"
    [ -n "$S3RVER_PORT" ] && return 0
    kill -0 "$S3RVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "s3rver did not start:" >&2
  cat "$S3RVER_OUT" >&2
  s3rver_stop
  return 1
}

s3rver_stop() {
  [ -n "${S3RVER_PID:-}" ] || return 0
  kill -TERM "$S3RVER_PID" 2>/dev/null
  wait "$S3RVER_PID" 2>/dev/null
  S3RVER_PID=""
}
