#!/usr/bin/env bash
# perf profile of a tiered node (pinned to CPU 0; s3rver to CPU 1) while MIB MiB are appended and
# uploaded. Usage: profile.sh WEIR_BINARY OUT_FILE MIB
set -euo pipefail
bin="$(realpath "$1")" outf="$2" mib="$3"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/weir-cold-prof.XXXXXX")"
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
taskset -a -cp 1 "$S3RVER_PID" >/dev/null
AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER taskset -c 0 "$bin" serve --listen 127.0.0.1:5213 \
  --data-dir "$tmp/tiered" --threads 1 --hot-bytes 4194304 --cold s3://bench/node \
  --s3-endpoint "http://127.0.0.1:$S3RVER_PORT" --local-bytes 1073741824 --cold-keep-bytes 8388608 \
  --cold-max-age-ms 1000 >"$tmp/node.log" 2>&1 &
np=$!
pids+=("$np")
for _ in $(seq 1 100); do curl -fsS http://127.0.0.1:5213/healthz >/dev/null 2>&1 && break; sleep 0.1; done
python3 -c "
import sys
for i in range($mib * 16):
    sys.stdout.write(('%08d' % i) * 8191 + 'x' * 7 + '\n')
" >"$tmp/data"
taskset -c 1 "$bin" stream --server http://127.0.0.1:5213 create big --content-type application/octet-stream >/dev/null
perf record -F 1999 -g -o "$tmp/perf.data" -p "$np" >/dev/null 2>&1 &
pp=$!
taskset -c 1 "$bin" stream --server http://127.0.0.1:5213 append big --lines --content-type application/octet-stream <"$tmp/data" >/dev/null
for _ in $(seq 1 1200); do
  up="$(curl -fsS http://127.0.0.1:5213/metrics | awk '$1 == "weir_tier_uploaded_bytes_total" { print $2 }')"
  [ "${up:-0}" -ge $((mib << 20)) ] && break
  sleep 0.1
done
kill -INT "$pp"; wait "$pp" || true
{
  perf report -i "$tmp/perf.data" --no-children -g none --sort dso,symbol --stdio 2>/dev/null | grep -E '^ +[0-9]' |
    sed "s/  *$//" | head -40 || true
  echo "by library:"
  perf report -i "$tmp/perf.data" --no-children -g none --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | sed "s/  *$//" || true
  echo "by thread:"
  perf report -i "$tmp/perf.data" --no-children -g none --sort comm --stdio 2>/dev/null | grep -E '^ +[0-9]' | sed "s/  *$//" || true
} >"$outf"
