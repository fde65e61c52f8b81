#!/bin/bash
# A restore snapshot larger than one PUT, end to end (docs/cold-tier.md, "Restore"): a node with a cold
# tier on s3rver, whose PUTs of the group's data objects fail (a file stands where s3rver would make
# their directory) while its snapshots land. 120 MiB are appended to one stream: none reaches an object,
# so the first restore snapshot after the last append inlines them all and goes up in parts, its head
# last. The node is killed (SIGKILL), its data directory removed, and a node started with --restore on
# an empty one must read the stream back byte for byte. Label slow: 120 MiB through a sanitized build.
#
#   restore_in_parts.sh WEIR_BINARY
set -euo pipefail
weir="$1"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/s3rver.sh"

work="$(mktemp -d "${TMPDIR:-/tmp}/weir-restore-parts.XXXXXX")"
node_pid=""
cleanup() {
  if [ -n "$node_pid" ]; then
    kill -KILL "$node_pid" 2>/dev/null || true
    wait "$node_pid" 2>/dev/null || true
  fi
  s3rver_stop
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "restore_in_parts: $*" >&2
  for f in "$work"/node*.log; do
    [ -f "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }
  done
  exit 1
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

head -c $((120 * 1024 * 1024)) /dev/urandom >"$work/data"
want="$(sha256sum <"$work/data" | cut -d' ' -f1)"

s3rver_start "$work/s3" weir
s3_port="$S3RVER_PORT"
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
port="$(free_port)"
base="http://127.0.0.1:$port"
args=(--listen "127.0.0.1:$port" --threads 1 --cold s3://weir/parts --s3-endpoint "http://127.0.0.1:$s3_port"
  --cold-snapshot-interval-ms 2000)

start_node() {  # DATA_DIR LOG [more args]
  local dir="$1" log="$2"
  shift 2
  "$weir" serve --data-dir "$dir" "${args[@]}" "$@" >"$log" 2>&1 &
  node_pid=$!
  local i
  for i in $(seq 1 120); do  # up to 60 s (a restore downloads first)
    curl -s -o /dev/null "$base/healthz" && return 0
    kill -0 "$node_pid" 2>/dev/null || fail "the node stopped (see $log)"
    sleep 0.5
  done
  fail "the node did not answer within 60 s"
}

start_node "$work/data-1" "$work/node-1.log" --hot-bytes 4194304
code="$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/octet-stream' "$base/s")"
[ "$code" = 201 ] || fail "create: $code"

# The group's objects cannot be written while the bytes come in: none of them reaches an object.
mkdir -p "$work/s3/files/weir/parts/e0001"
touch "$work/s3/files/weir/parts/e0001/g00000000"
split -b $((1024 * 1024)) -d -a 3 "$work/data" "$work/chunk."
for f in "$work"/chunk.*; do
  code="$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/octet-stream' \
    --data-binary "@$f" "$base/s")"
  [ "$code" = 204 ] || fail "append $f: $code"
  rm -f "$f"
done
written="$(date +%s.%N)"

# A snapshot of every append lands (the restore point is past the last one), and the newest is in
# parts: its head and its parts are in the bucket (s3rver keeps each object in a file named after its
# key).
restore_point() {
  curl -s "$base/metrics" | awk '/^weir_tier_restore_point_timestamp_seconds/ { print $2 }' | sort -g | head -n 1
}
past_writes() { python3 -c "import sys; sys.exit(0 if float('${1:-0}') >= $written else 1)"; }
for i in $(seq 1 600); do  # up to 60 s
  point="$(restore_point)"
  past_writes "$point" && break
  sleep 0.1
done
past_writes "$point" ||
  fail "no restore snapshot after the last append within 60 s (restore point ${point:-none}, written $written)"
# The disk is lost.
kill -KILL "$node_pid"
wait "$node_pid" 2>/dev/null || true
node_pid=""
snap_dir="$work/s3/files/weir/parts/e0001/snap/g00000000"
newest="$(ls "$snap_dir" | grep '\.snap\._S3rver_object$' | sort | tail -n 1)"
[ -n "$newest" ] || fail "no snapshot head in the bucket"
parts="$(ls "$snap_dir" | grep -c "^${newest%.snap._S3rver_object}\.part[0-9a-f]*\._S3rver_object\$" || true)"
[ "$parts" -ge 2 ] || fail "the newest snapshot ${newest%._S3rver_object} is in $parts parts: $(ls "$snap_dir")"
echo "restore_in_parts: ${newest%._S3rver_object} landed in $parts parts after the last append"
rm -rf "$work/data-1"

start_node "$work/data-2" "$work/node-2.log" --restore true
grep -q "restored 1 groups" "$work/node-2.log" || fail "the restore did not say what it restored"
grep "restore" "$work/node-2.log" | sed 's/^/restore_in_parts: /'

# Every byte back, following the offsets until the stream is up to date.
python3 - "$base/s" "$work/back" <<'EOF'
import sys, urllib.request
url, out_path = sys.argv[1], sys.argv[2]
out, offset = bytearray(), "-1"
for _ in range(100000):
    with urllib.request.urlopen(f"{url}?offset={offset}", timeout=30) as r:
        body = r.read()
        out += body
        offset_next = r.headers.get("Stream-Next-Offset")
        done = r.headers.get("Stream-Up-To-Date") == "true"
    if done or not body or offset_next == offset:
        break
    offset = offset_next
open(out_path, "wb").write(out)
EOF
got="$(sha256sum <"$work/back" | cut -d' ' -f1)"
[ "$got" = "$want" ] || fail "the restored stream differs: $(stat -c %s "$work/back") bytes, sha256 $got, wrote $want"
echo "restore_in_parts: 125829120 bytes read back identical"
