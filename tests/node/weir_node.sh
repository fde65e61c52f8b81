# Shared by the integration scripts that run Node tools against weir (conformance, client):
# start a `weir serve` on an ephemeral 127.0.0.1 port with a temporary data dir, wait for /healthz,
# and stop it by PID. Source it, then:
#   weir_start WEIR_BINARY [extra serve flags...]   -> sets WEIR_PID, WEIR_PORT, WEIR_URL, WEIR_DIR
#   weir_check_alive                                 -> fails if weir died
#   weir_stop                                        -> SIGTERM by PID, fails if weir crashed or hung
# For a node serving HTTPS (--tls-cert): set WEIR_SCHEME=https and WEIR_CA=the CA file before weir_start.

weir_start() {
  local bin="$1"
  shift
  WEIR_DIR="$(mktemp -d "${TMPDIR:-/tmp}/weir-it.XXXXXX")"
  WEIR_LOG="$WEIR_DIR/weir.log"
  "$bin" serve --listen 127.0.0.1:0 --data-dir "$WEIR_DIR/data" "$@" >"$WEIR_LOG" 2>&1 &
  WEIR_PID=$!
  WEIR_PORT=""
  local i
  for i in $(seq 1 100); do  # up to 10 s
    if ! kill -0 "$WEIR_PID" 2>/dev/null; then
      echo "weir exited during start-up:" >&2
      cat "$WEIR_LOG" >&2
      return 1
    fi
    WEIR_PORT="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$WEIR_LOG" | head -n 1)"
    if [ -n "$WEIR_PORT" ] && curl -fsS ${WEIR_CA:+--cacert "$WEIR_CA"} \
      "${WEIR_SCHEME:-http}://127.0.0.1:$WEIR_PORT/healthz" >/dev/null 2>&1; then
      WEIR_URL="${WEIR_SCHEME:-http}://127.0.0.1:$WEIR_PORT"
      echo "weir (pid $WEIR_PID) serving $WEIR_URL"
      return 0
    fi
    sleep 0.1
  done
  echo "weir did not become healthy in 10 s:" >&2
  cat "$WEIR_LOG" >&2
  kill -KILL "$WEIR_PID" 2>/dev/null
  return 1
}

weir_check_alive() {
  if ! kill -0 "$WEIR_PID" 2>/dev/null; then
    echo "weir (pid $WEIR_PID) is no longer running:" >&2
    tail -n 50 "$WEIR_LOG" >&2
    return 1
  fi
}

weir_stop() {
  local rc=0 i
  if ! weir_check_alive; then
    wait "$WEIR_PID" 2>/dev/null
    rm -rf "$WEIR_DIR"
    return 1
  fi
  kill -TERM "$WEIR_PID"
  for i in $(seq 1 100); do  # graceful stop: up to 10 s
    kill -0 "$WEIR_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$WEIR_PID" 2>/dev/null; then
    echo "weir (pid $WEIR_PID) did not stop on SIGTERM within 10 s" >&2
    kill -KILL "$WEIR_PID" 2>/dev/null
    rc=1
  fi
  wait "$WEIR_PID"
  local status=$?
  if [ $rc -eq 0 ] && [ $status -ne 0 ]; then
    echo "weir exited with status $status:" >&2
    tail -n 50 "$WEIR_LOG" >&2
    rc=1
  fi
  rm -rf "$WEIR_DIR"
  return $rc
}
