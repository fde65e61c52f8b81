# Sourced by the cold-tier benches: a scratch directory ($tmp), the processes to stop at exit ($pids:
# each is sent TERM and waited for, then the directory is removed), an s3rver on loopback with the
# bucket `bench` ($S3RVER_PID, $S3RVER_PORT), cpu_ticks PID (user + system CPU in clock ticks; $tck a
# second), metric PORT NAME (a node's metric's value), wait_uploaded PORT BYTES (until the node's
# uploads reach BYTES, at most 2 min),
# start_node BIN NAME PORT [flags...] (a single-threaded node pinned to CPU 0, data in $tmp/NAME, its
# PID in node_pid[NAME], s3rver's credentials in its environment) and stop_node NAME.
# Usage: . bench/cold/scratch.sh NAME (after setting $root).
tmp="$(mktemp -d "${TMPDIR:-/tmp}/weir-$1.XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
. "$root/tests/integration/s3/s3rver.sh"
s3rver_start "$tmp/s3" bench
pids+=("$S3RVER_PID")
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
tck="$(getconf CLK_TCK)"
metric() { curl -fsS "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'; }
wait_uploaded() {
  for _ in $(seq 1 1200); do
    [ "$(metric "$1" weir_tier_uploaded_bytes_total)" -ge "$2" ] && return 0
    sleep 0.1
  done
  echo "$0: the uploads of the node on port $1 did not reach $2 bytes" >&2
  return 1
}
declare -A node_pid
start_node() {
  local bin="$1" name="$2" port="$3"
  shift 3
  AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER taskset -c 0 "$bin" serve --listen "127.0.0.1:$port" \
    --data-dir "$tmp/$name" --threads 1 "$@" >"$tmp/$name.log" 2>&1 &
  pids+=($!)
  node_pid[$name]=$!
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  cat "$tmp/$name.log" >&2
  return 1
}
stop_node() {
  kill -TERM "${node_pid[$1]}" 2>/dev/null || true
  wait "${node_pid[$1]}" 2>/dev/null || true
}
