# Sourced by the cold-tier benches: a scratch directory ($tmp), the processes to stop at exit ($pids:
# each is sent TERM and waited for, then the directory is removed), an s3rver on loopback with the
# bucket `bench` ($S3RVER_PID, $S3RVER_PORT), and cpu_ticks PID (user + system CPU in clock ticks).
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
