#!/usr/bin/env bash
# bench/redis-compare/run.sh: weir's append path against Redis Streams, both fsyncing every write, in one
# run on one machine and one disk (docs/benchmarks.md, section "Append path against Redis Streams").
#
#   bench/redis-compare/run.sh [--secs N] [--rounds N] [--threads N] [--size BYTES] [--streams N] [--out DIR]
#                              [--cases fsync-64,fsync-1,relaxed-64]
#
# Each round starts both servers fresh (new data directories under /tmp, on the same disk) and measures
# them in turns, weir then Redis in odd rounds and the reverse in even ones:
#   fsync-64   64 connections, `weir --fsync always` vs `redis --appendonly yes --appendfsync always`
#   fsync-1    1 connection, same modes
#   relaxed-64 64 connections, `weir --fsync interval:1000` vs Redis `--appendfsync everysec`
# weir: bench/redis-compare/http_closed_loop.cc (built here with c++; POST of SIZE bytes, round-robin over
# STREAMS streams, every request timed; wrk was dropped: at ~100k requests/s on this machine its latency
# figures broke Little's law by up to 10x, see the source's comment);
# Redis: redis-benchmark with `XADD s:__rand_int__ * f <SIZE bytes>` over STREAMS keys (-r), default
# settings otherwise (AOF rewrite on). Both get a 2 s warm-up. Reported per case and target: requests/s,
# p50 and p99 (ms), and server CPU per request (utime+stime of the server process over the phase).
# Medians over the rounds go to DIR/redis-compare.md with the ratios (weir / Redis), and weir's
# interval-mode p99 beside its always-mode p99 of the same run (the goal: no worse).
# Env: WEIR_BIN (default build/release/src/app/weir), WEIR_FLAGS (more `weir serve` flags, e.g.
# "--group-commit-gather-us 500"). WEIR_ALT_BIN: a second weir binary (e.g. built with another default)
# measured in every round right after the first, reported as target `weir-alt` (WEIR_ALT_FLAGS: its flags).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"

secs=10 rounds=3 threads="" size=1024 streams=64 out="" cases="fsync-64,fsync-1,relaxed-64"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --secs) secs="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --threads) threads="$2"; shift ;;
    --size) size="$2"; shift ;;
    --streams) streams="$2"; shift ;;
    --out) out="$2"; shift ;;
    --cases) cases="$2"; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "redis-compare: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[[ -n "$out" ]] || out="bench/results/$(date -u +%Y-%m-%d)-redis-compare"
mkdir -p "$out"
if [[ -z "$threads" ]]; then threads=2; if (( $(nproc) <= 2 )); then threads=1; fi; fi

weir_bin="${WEIR_BIN:-build/release/src/app/weir}"
for tool in "$weir_bin" redis-server redis-benchmark redis-cli c++; do
  command -v "$tool" >/dev/null || [[ -x "$tool" ]] || { echo "redis-compare: $tool is missing" >&2; exit 1; }
done

client_dir=$(mktemp -d /tmp/redis-compare-client.XXXXXX)
client="$client_dir/http_closed_loop"
c++ -O2 -std=c++20 -o "$client" bench/redis-compare/http_closed_loop.cc

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
pid="" tmp=""
stop_server() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; fi
  pid=""
  [[ -n "$tmp" ]] && rm -rf "$tmp"
  tmp=""
}
trap 'stop_server; rm -rf "$client_dir"' EXIT
raw="$out/raw.tsv"
printf 'round\tcase\ttarget\treq_s\tp50_ms\tp99_ms\tcpu_us_per_req\n' >"$raw"

wait_port() {
  for _ in $(seq 1 400); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.025
  done
  echo "redis-compare: nothing listens on $1" >&2; return 1
}

start_weir() {  # fsync mode [binary [flags]]
  tmp=$(mktemp -d /tmp/weir-redis-compare.XXXXXX)
  port=$(free_port)
  "${2:-$weir_bin}" serve --listen "127.0.0.1:$port" --data-dir "$tmp/data" --threads "$threads" --fsync "$1" \
    --log-level warn ${3-${WEIR_FLAGS:-}} >"$tmp/serve.log" 2>&1 &
  pid=$!
  wait_port "$port"
  for i in $(seq 0 $((streams - 1))); do
    curl -fsS -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' "http://127.0.0.1:$port/v1/stream/fill-$i"
  done
}
start_redis() {  # appendfsync mode
  tmp=$(mktemp -d /tmp/redis-compare.XXXXXX)
  port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp" --appendonly yes --appendfsync "$1" --save '' \
    --daemonize no --logfile "$tmp/redis.log" &
  pid=$!
  wait_port "$port"
  until redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; do sleep 0.025; done
}

run_weir() {  # conns -> "req_s p50 p99 cpu"
  local c=$1
  "$client" 127.0.0.1 "$port" "$c" 2 "$size" "$streams" >/dev/null  # warm-up
  local before; before=$(cpu_ticks "$pid")
  # requests req_s p50_ms p99_ms p999_ms max_ms mean_ms errors
  local r; r=$("$client" 127.0.0.1 "$port" "$c" "$secs" "$size" "$streams")
  local after; after=$(cpu_ticks "$pid")
  read -r reqs rps p50 p99 _ _ _ errors <<<"$r"
  (( errors == 0 )) || echo "redis-compare: weir answered $errors errors" >&2
  echo "$rps $p50 $p99 $(cpu_per_req "$before" "$after" "$reqs")"
}
cpu_per_req() {  # ticks_before ticks_after requests -> microseconds of server CPU per request
  awk -v b="$1" -v a="$2" -v n="$3" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (a - b) / hz * 1e6 / n }'
}
run_redis() {  # conns secs -> "req_s p50 p99 cpu"
  local c=$1 value; value=$(head -c "$size" /dev/zero | tr '\0' x)
  # Requests for about `secs` seconds at the rate of a 2 s probe.
  local probe; probe=$(redis-benchmark -p "$port" -c "$c" -n $((c * 200)) -r "$streams" --csv \
    XADD "s:__rand_int__" '*' f "$value" | awk -F'"' 'NR == 2 {print $4}')
  local n; n=$(awk -v r="$probe" -v s="$secs" 'BEGIN { n = int(r * s); if (n < 1000) n = 1000; print n }')
  local before; before=$(cpu_ticks "$pid")
  local csv; csv=$(redis-benchmark -p "$port" -c "$c" -n "$n" -r "$streams" --csv XADD "s:__rand_int__" '*' f "$value")
  local after; after=$(cpu_ticks "$pid")
  # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
  echo "$csv" | awk -F'"' -v cpu="$(cpu_per_req "$before" "$after" "$n")" 'NR == 2 { print $4, $10, $14, cpu }'
}

measure() {  # round case target weir_mode redis_mode conns
  echo "redis-compare: round $1/$rounds, $2, $3" >&2
  case "$3" in
    weir) start_weir "$4"; r=$(run_weir "$6") ;;
    weir-alt) start_weir "$4" "$WEIR_ALT_BIN" "${WEIR_ALT_FLAGS:-}"; r=$(run_weir "$6") ;;
    redis) start_redis "$5"; r=$(run_redis "$6") ;;
  esac
  stop_server
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(tr ' ' '\t' <<<"$r")" >>"$raw"
}

targets="weir${WEIR_ALT_BIN:+ weir-alt} redis"
for round in $(seq 1 "$rounds"); do
  # Odd rounds in one order, even rounds in the reverse one: the disk's state drifts within a round (its
  # rate limiter refills, other work's writes land), which must not favour whoever always goes first.
  order=$targets
  (( round % 2 == 0 )) && order=$(tr ' ' '\n' <<<"$targets" | tac | tr '\n' ' ')
  for case in ${cases//,/ }; do
    conns=64; weir_mode=always; redis_mode=always
    [[ $case == fsync-1 ]] && conns=1
    [[ $case == relaxed-64 ]] && { weir_mode=interval:1000; redis_mode=everysec; }
    for target in $order; do measure "$round" "$case" "$target" "$weir_mode" "$redis_mode" "$conns"; done
  done
done

python3 - "$raw" "$out/redis-compare.md" "$secs" "$rounds" "$threads" "$size" "$streams" <<'PY'
import csv, statistics, sys
raw, md, secs, rounds, threads, size, streams = sys.argv[1:]
rows = list(csv.DictReader(open(raw), delimiter="\t"))
def med(case, target, key):
    v = [float(r[key]) for r in rows if r["case"] == case and r["target"] == target]
    return statistics.median(v) if v else float("nan")
out = [f"# weir against Redis Streams ({rounds} rounds of {secs} s, medians; {size}-byte appends over {streams} streams; weir --threads {threads})", "",
       "| case | weir req/s | Redis req/s | ratio | weir p50 / p99 ms | Redis p50 / p99 ms | weir / Redis CPU us per req |",
       "|---|---|---|---|---|---|---|"]
cases = [c for c in ["fsync-64", "fsync-1", "relaxed-64"] if any(r["case"] == c for r in rows)]
alt = any(r["target"] == "weir-alt" for r in rows)
for case in cases:
    w, r = med(case, "weir", "req_s"), med(case, "redis", "req_s")
    out.append(f"| {case} | {w:,.0f} | {r:,.0f} | {w / r:.2f}x | {med(case, 'weir', 'p50_ms'):.2f} / {med(case, 'weir', 'p99_ms'):.2f} | "
               f"{med(case, 'redis', 'p50_ms'):.2f} / {med(case, 'redis', 'p99_ms'):.2f} | "
               f"{med(case, 'weir', 'cpu_us_per_req'):.1f} / {med(case, 'redis', 'cpu_us_per_req'):.1f} |")
if alt:
    out += ["", "Second weir binary (WEIR_ALT_BIN), same rounds:", "",
            "| case | weir-alt req/s | ratio to Redis | weir-alt p50 / p99 ms | p50 gap to Redis ms (weir, weir-alt) | weir-alt CPU us per req |",
            "|---|---|---|---|---|---|"]
    for case in cases:
        w, r = med(case, "weir-alt", "req_s"), med(case, "redis", "req_s")
        rp = med(case, "redis", "p50_ms")
        out.append(f"| {case} | {w:,.0f} | {w / r:.2f}x | {med(case, 'weir-alt', 'p50_ms'):.2f} / {med(case, 'weir-alt', 'p99_ms'):.2f} | "
                   f"{med(case, 'weir', 'p50_ms') - rp:+.3f}, {med(case, 'weir-alt', 'p50_ms') - rp:+.3f} | "
                   f"{med(case, 'weir-alt', 'cpu_us_per_req'):.1f} |")
if "fsync-64" not in cases or "relaxed-64" not in cases:
    open(md, "w").write("\n".join(out) + "\n")
    print("\n".join(out))
    sys.exit(0)
a, i = med("fsync-64", "weir", "p99_ms"), med("relaxed-64", "weir", "p99_ms")
out += ["", f"weir at 64 connections, same run: p99 {i:.2f} ms with --fsync interval:1000 against {a:.2f} ms with "
        f"--fsync always ({'no worse' if i <= a else 'WORSE'}); appends/s {med('relaxed-64', 'weir', 'req_s'):,.0f} "
        f"against {med('fsync-64', 'weir', 'req_s'):,.0f}"]
open(md, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
