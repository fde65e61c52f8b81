#!/usr/bin/env bash
# HTTP/2 benchmark, three parts (PARTS="engine append fanout", all by default):
#
#  engine  h2load against weir-techempower's /plaintext, nginx (`listen ... http2`) and h2o (one thread),
#          all h2c with prior knowledge answering "Hello, World!", and `weir serve` answering /healthz
#          (server "weir-serve"): req/s and server CPU microseconds per request at 1, 10 and 100
#          concurrent streams per connection (h2load -m) over a fixed CONNS (16) connections.
#  append  `weir serve --threads 1` with 256 B appends POSTed by h2load over HTTP/1.1 (--h1) and over
#          h2c, the same client for both: appends/s, p50/p99 (from h2load's per-request log) and server
#          CPU per append, over 64 streams (h2load takes their URLs round robin).
#  fanout  1,000 SSE tails of one stream over 10 h2c connections against 1,000 HTTP/1.1 connections, one
#          writer appending 64 B events at 20 a second (bench/h2/fanout.mjs, node:http2 and node:http):
#          delivery p50/p99 (append sent to tail received) and the server's RSS.
#
# Every server is pinned to CPU 0 with one thread (nginx: one worker; h2o: num-threads 1), the client
# (h2load -t1, or node) to CPU 1. Server CPU per request = utime+stime of every server process
# (/proc/PID/stat, children included) over the client's run / requests completed; the client's own CPU
# (bash `time` on h2load) is printed beside it, to show it was not the bottleneck. Within each round
# every case runs once per server (or protocol), in turn, so that they meet the same machine
# conditions; the summary gives medians over rounds and the ratio weir / peer.
#
#   bench/h2/run.sh                              # 3 rounds, 10 s per h2load run
#   ROUNDS=5 DURATION=5 PARTS=engine bench/h2/run.sh
#   SERVERS="weir nginx" STREAMS="1 100" CONNS=64 PARTS=engine bench/h2/run.sh
#   FSYNC=always PARTS=append bench/h2/run.sh    # appends bound by fdatasync instead of interval:100
#   WEIR_TE_BASE=/tmp/weir-te-old SERVERS="weir weir-base h2o nginx" PARTS=engine bench/h2/run.sh
#                                                # a second weir-techempower build in the same rounds
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
WEIR_TE=${WEIR_TE:-$root/build/release/examples/techempower/weir-techempower}
WEIR_TE_BASE=${WEIR_TE_BASE:-}  # server "weir-base": another weir-techempower build, for before/after
WEIR=${WEIR:-$root/build/release/src/app/weir}
PARTS=${PARTS:-"engine append fanout"}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
SERVERS=${SERVERS:-"weir nginx h2o weir-serve"}
CONNS=${CONNS:-16}
STREAMS=${STREAMS:-"1 10 100"}
# append cases: name protocol connections streams-per-connection
APPEND_CASES=${APPEND_CASES:-"h1-64x1 h1 64 1
h2-64x1 h2 64 1
h2-4x16 h2 4 16"}
APPEND_STREAMS=${APPEND_STREAMS:-64}
FSYNC=${FSYNC:-interval:100}
FANOUT_TAILS=${FANOUT_TAILS:-1000}
FANOUT_CONNS=${FANOUT_CONNS:-10}
FANOUT_EVENTS=${FANOUT_EVENTS:-200}
FANOUT_RATE=${FANOUT_RATE:-20}
PORT=${PORT:-18280}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}

hz=$(getconf CLK_TCK)
tmp=$(mktemp -d /tmp/weir-h2-bench.XXXXXX)
server_pid=""

cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

need() {  # binary hint
  if [[ ! -x "$1" ]] && ! command -v "$1" >/dev/null; then
    echo "$1 is missing: $2" >&2
    exit 2
  fi
}
need h2load "apt-get install nghttp2-client"
for part in $PARTS; do
  case "$part" in
    engine)
      for s in $SERVERS; do
        case "$s" in
          weir) need "$WEIR_TE" "cmake --preset release && ninja -C build/release weir-techempower" ;;
          weir-serve) need "$WEIR" "cmake --preset release && ninja -C build/release weir" ;;
          weir-base) need "${WEIR_TE_BASE:-WEIR_TE_BASE}" "set WEIR_TE_BASE to a weir-techempower binary" ;;
          nginx) need nginx "apt-get install nginx-light" ;;
          h2o) need h2o "apt-get install h2o" ;;
          *) echo "unknown server '$s' (weir, weir-base, weir-serve, nginx, h2o)" >&2; exit 2 ;;
        esac
      done
      ;;
    append) need "$WEIR" "cmake --preset release && ninja -C build/release weir" ;;
    fanout) need "$WEIR" "cmake --preset release && ninja -C build/release weir"; need node "Node.js 18 or later" ;;
    *) echo "unknown part '$part' (engine, append, fanout)" >&2; exit 2 ;;
  esac
done

# utime+stime (clock ticks) of a process and its children (nginx's worker, h2o's helper).
cpu_ticks() {
  local total=0 p t
  for p in "$1" $(pgrep -P "$1" || true); do
    if [[ -r /proc/$p/stat ]]; then
      t=$(sed 's/^.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')
      total=$((total + t))
    fi
  done
  echo "$total"
}

wait_up() {  # path
  for _ in $(seq 1 200); do
    if curl -sf --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$PORT$1"; then return 0; fi
    sleep 0.05  # polling for the listener to come up
  done
  echo "server did not come up on port $PORT: $(cat "$tmp"/*.log 2>/dev/null)" >&2
  exit 1
}

start_server() {  # name
  # Another listener on the port (SO_REUSEPORT) would take part of the connections unseen.
  if ss -Hltn "sport = :$PORT" | grep -q .; then
    echo "port $PORT is already in use; set PORT=" >&2
    exit 1
  fi
  local path=/plaintext
  case "$1" in
    weir)
      taskset -c "$SERVER_CPU" "$WEIR_TE" --listen "127.0.0.1:$PORT" --threads 1 >"$tmp/weir.log" 2>&1 &
      server_pid=$!
      ;;
    weir-base)
      taskset -c "$SERVER_CPU" "$WEIR_TE_BASE" --listen "127.0.0.1:$PORT" --threads 1 >"$tmp/weir-base.log" 2>&1 &
      server_pid=$!
      ;;
    weir-serve)
      rm -rf "$tmp/data"
      taskset -c "$SERVER_CPU" "$WEIR" serve --listen "127.0.0.1:$PORT" --threads 1 --data-dir "$tmp/data" \
        --fsync "$FSYNC" --log-level warn >"$tmp/serve.log" 2>&1 &
      server_pid=$!
      path=/healthz
      ;;
    nginx)
      rm -rf "$tmp/nginx" && mkdir -p "$tmp/nginx"
      sed -e "s|@PREFIX@|$tmp/nginx|g" -e "s|@PORT@|$PORT|g" "$here/nginx.conf.in" >"$tmp/nginx/nginx.conf"
      taskset -c "$SERVER_CPU" nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" &
      server_pid=$!
      ;;
    h2o)
      rm -rf "$tmp/h2o" && mkdir -p "$tmp/h2o"
      printf 'Hello, World!' >"$tmp/h2o/plaintext.txt"
      sed -e "s|@PREFIX@|$tmp/h2o|g" -e "s|@PORT@|$PORT|g" -e "s|@USER@|$(id -un)|g" "$here/h2o.conf.in" \
        >"$tmp/h2o/h2o.conf"
      taskset -c "$SERVER_CPU" h2o -c "$tmp/h2o/h2o.conf" >"$tmp/h2o.log" 2>&1 &
      server_pid=$!
      ;;
  esac
  wait_up "$path"
}

stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid" || true
  server_pid=""
}

# Runs h2load on the client CPU; leaves its output in $tmp/h2load.out and its CPU seconds in
# $tmp/h2load.cpu ("user sys").
run_h2load() {
  local TIMEFORMAT='%U %S'
  { time taskset -c "$CLIENT_CPU" h2load -t1 "$@" >"$tmp/h2load.out" 2>&1; } 2>"$tmp/h2load.cpu"
}

# "done succeeded req/s" from h2load's summary
h2load_counts() {
  awk '/^requests:/ {d = $6; s = $8} /^finished in/ {r = $4} END {printf "%d %d %.0f\n", d, s, r}' "$tmp/h2load.out"
}

median_table() {  # results-file key-columns... : prints "key median(col3) median(col4) ..." per key
  awk '{ k = $1 " " $2; if (!(k in seen)) { seen[k] = 1; order[m++] = k }
         n[k]++; for (f = 3; f <= NF; f++) v[k, f, n[k]] = $f; if (NF > nf) nf = NF }
       function med(k, f,   i, j, t, a, c) {
         c = n[k]; for (i = 1; i <= c; i++) a[i] = v[k, f, i] + 0
         for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
         return (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
       END { for (i = 0; i < m; i++) { k = order[i]; line = k
               for (f = 3; f <= nf; f++) line = line " " med(k, f)
               print line } }' "$1"
}

echo "# weir HTTP/2 benchmark ($(date -u +%Y-%m-%dT%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "# servers on CPU $SERVER_CPU (one thread / worker), client on CPU $CLIENT_CPU; $ROUNDS round(s), ${DURATION}s per h2load run"
echo "# weir $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'); $(h2load --version | head -1); $(nginx -v 2>&1); $(h2o --version | head -1)"
echo "# weir = $WEIR_TE${WEIR_TE_BASE:+; weir-base = $WEIR_TE_BASE}"

# ---------------------------------------------------------------- engine
if [[ " $PARTS " == *" engine "* ]]; then
  echo
  echo "## engine: h2load -t1 -c$CONNS -m<streams> -D$DURATION, h2c prior knowledge"
  echo
  echo "| round | streams/conn | server | req/s | server CPU us/req | h2load CPU us/req | h2load CPU share | failed |"
  echo "|---|---|---|---|---|---|---|---|"
  res="$tmp/engine.txt"
  : >"$res"
  : >"$tmp/engine-rounds.txt"
  for round in $(seq 1 "$ROUNDS"); do
    for m in $STREAMS; do
      for s in $SERVERS; do
        start_server "$s"
        path=/plaintext
        [[ "$s" == weir-serve ]] && path=/healthz
        before=$(cpu_ticks "$server_pid")
        run_h2load -c"$CONNS" -m"$m" -D"$DURATION" "http://127.0.0.1:$PORT$path"
        after=$(cpu_ticks "$server_pid")
        stop_server
        read -r completed ok rps < <(h2load_counts)
        read -r cu cs <"$tmp/h2load.cpu"
        cpu_us=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$completed" 'BEGIN {printf "%.3f", n ? t * 1e6 / hz / n : 0}')
        cli_us=$(awk -v u="$cu" -v s="$cs" -v n="$completed" 'BEGIN {printf "%.3f", n ? (u + s) * 1e6 / n : 0}')
        cli_share=$(awk -v u="$cu" -v s="$cs" -v d="$DURATION" 'BEGIN {printf "%.0f%%", (u + s) * 100 / d}')
        echo "| $round | $m | $s | $rps | $cpu_us | $cli_us | $cli_share | $((completed - ok)) |"
        echo "$m $s $rps $cpu_us $cli_us" >>"$res"
        echo "$round $m $s $cpu_us" >>"$tmp/engine-rounds.txt"
      done
    done
  done
  echo
  echo "Medians over $ROUNDS round(s) (ratio: weir's CPU per request / the peer's; below 1 = weir cheaper), and"
  echo "the ratio within each round, then its median (rounds where weir was cheaper / rounds):"
  echo
  echo "| streams/conn | server | req/s | server CPU us/req | h2load CPU us/req | weir / server, medians | weir / server per round: median (weir cheaper) |"
  echo "|---|---|---|---|---|---|---|"
  # Per-round ratios, weir against each server of the same round: "streams server ratio".
  awk '{ c[$1, $2, $3] = $4; if ($3 != "weir") { rs[++n] = $1 " " $2 " " $3 } }
       END { for (i = 1; i <= n; i++) { split(rs[i], a, " "); w = c[a[1], a[2], "weir"]; p = c[a[1], a[2], a[3]]
               if (w > 0 && p > 0) print a[2], a[3], w / p } }' "$tmp/engine-rounds.txt" >"$tmp/ratios.txt"
  median_table "$res" | awk -v rf="$tmp/ratios.txt" '
      BEGIN { while ((getline line < rf) > 0) { split(line, a, " "); k = a[1] " " a[2]; n[k]++; r[k, n[k]] = a[3] } }
      function med(k,   i, j, t, c, x) { c = n[k]; for (i = 1; i <= c; i++) x[i] = r[k, i]
        for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
        return (c % 2) ? x[(c + 1) / 2] : (x[c / 2] + x[c / 2 + 1]) / 2 }
      function wins(k,   i, c) { c = 0; for (i = 1; i <= n[k]; i++) if (r[k, i] < 1) c++; return c }
      { k = $1; key[NR] = $0; if ($2 == "weir") w[k] = $4 }
      END { for (i = 1; i <= NR; i++) { split(key[i], a, " "); kk = a[1] " " a[2]
              r1 = (a[2] != "weir" && w[a[1]] > 0 && a[4] > 0) ? sprintf("%.2f", w[a[1]] / a[4]) : "-"
              r2 = (kk in n) ? sprintf("%.2f (%d/%d)", med(kk), wins(kk), n[kk]) : "-"
              printf "| %s | %s | %s | %s | %s | %s | %s |\n", a[1], a[2], a[3], a[4], a[5], r1, r2 } }'
fi

# ---------------------------------------------------------------- append
if [[ " $PARTS " == *" append "* ]]; then
  echo
  echo "## append: weir serve --threads 1 --fsync $FSYNC, 256 B POSTs over $APPEND_STREAMS streams, h2load -D$DURATION"
  echo
  echo "| round | case | protocol | connections x streams | appends/s | p50 ms | p99 ms | server CPU us/append | h2load CPU us/append | non-2xx |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  head -c 256 /dev/zero | tr '\0' 'x' >"$tmp/body"
  res="$tmp/append.txt"
  : >"$res"
  saved_fsync=$FSYNC
  for round in $(seq 1 "$ROUNDS"); do
    while read -r name proto conns m; do
      [[ -z "$name" ]] && continue
      start_server weir-serve
      urls=()
      for i in $(seq 1 "$APPEND_STREAMS"); do
        curl -sf -X PUT -H 'Content-Type: text/plain' "http://127.0.0.1:$PORT/v1/stream/append-$i" >/dev/null
        urls+=("http://127.0.0.1:$PORT/v1/stream/append-$i")
      done
      flags=()
      [[ "$proto" == h1 ]] && flags=(--h1)
      rm -f "$tmp/append.log"  # h2load appends to its log file
      before=$(cpu_ticks "$server_pid")
      run_h2load "${flags[@]}" -c"$conns" -m"$m" -D"$DURATION" -d "$tmp/body" -H 'content-type: text/plain' \
        --log-file="$tmp/append.log" "${urls[@]}"
      after=$(cpu_ticks "$server_pid")
      stop_server
      read -r completed ok rps < <(h2load_counts)
      read -r cu cs <"$tmp/h2load.cpu"
      # h2load's log: start (us since epoch), status, duration (us), one line per request.
      read -r p50 p99 bad < <(sort -k3,3n "$tmp/append.log" | awk '{ d[NR] = $3; if ($2 < 200 || $2 > 299) b++ }
          END { printf "%.3f %.3f %d\n", d[int(NR * 0.5) + 1] / 1000, d[int(NR * 0.99) + 1] / 1000, b }')
      cpu_us=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$completed" 'BEGIN {printf "%.3f", n ? t * 1e6 / hz / n : 0}')
      cli_us=$(awk -v u="$cu" -v s="$cs" -v n="$completed" 'BEGIN {printf "%.3f", n ? (u + s) * 1e6 / n : 0}')
      echo "| $round | $name | $proto | $conns x $m | $rps | $p50 | $p99 | $cpu_us | $cli_us | $bad |"
      echo "$name $proto $rps $p50 $p99 $cpu_us $cli_us" >>"$res"
    done <<<"$APPEND_CASES"
  done
  FSYNC=$saved_fsync
  echo
  echo "Medians over $ROUNDS round(s):"
  echo
  echo "| case | protocol | appends/s | p50 ms | p99 ms | server CPU us/append | h2load CPU us/append |"
  echo "|---|---|---|---|---|---|---|"
  median_table "$res" | awk '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }'
fi

# ---------------------------------------------------------------- fanout
if [[ " $PARTS " == *" fanout "* ]]; then
  echo
  echo "## fanout: $FANOUT_TAILS SSE tails, h2 over $FANOUT_CONNS connections against h1 over $FANOUT_TAILS," \
    "$FANOUT_EVENTS events of 64 B at $FANOUT_RATE/s (weir serve --threads 1 --fsync $FSYNC)"
  echo
  echo "| round | protocol | connections | live tails | delivered | lost | dup | p50 ms | p99 ms | max ms | server RSS MiB before / live / peak | RSS per tail (bytes) | server CPU s | client CPU share |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  res="$tmp/fanout.txt"
  : >"$res"
  # 1,000 HTTP/1.1 connections on each side of loopback.
  ulimit -n 65536 2>/dev/null || true
  for round in $(seq 1 "$ROUNDS"); do
    for proto in h1 h2; do
      start_server weir-serve
      before=$(cpu_ticks "$server_pid")
      out=$(taskset -c "$CLIENT_CPU" node "$here/fanout.mjs" --base "http://127.0.0.1:$PORT/v1/stream" --proto "$proto" \
        --tails "$FANOUT_TAILS" --conns "$FANOUT_CONNS" --events "$FANOUT_EVENTS" --rate "$FANOUT_RATE" --bytes 64 \
        --stream "fanout-$round-$proto" --server-pid "$server_pid")
      after=$(cpu_ticks "$server_pid")
      stop_server
      echo "$out" >>"$tmp/fanout.jsonl"
      # shellcheck disable=SC2016 # JavaScript, not shell
      line=$(node -e '
        const o = JSON.parse(process.argv[1]); const mib = (b) => (b / 1048576).toFixed(1);
        console.log([o.proto, o.connections, o.live, o.delivered, o.lost, o.duplicated, o.delivery_p50_ms,
          o.delivery_p99_ms, o.delivery_max_ms, `${mib(o.server_rss_before)} / ${mib(o.server_rss_live)} / ${mib(o.server_rss_peak)}`,
          o.rss_per_tail, process.argv[2], o.client_cpu_share].join("|"))' "$out" \
        "$(awk -v t=$((after - before)) -v hz="$hz" 'BEGIN {printf "%.2f", t / hz}')")
      echo "| $round | ${line//|/ | } |"
      echo "$line" | awk -F'|' '{ split($10, r, " / "); printf "%s x %s %s %s %s %s %s\n", $1, $7, $8, $9, r[2], $11, $12 }' >>"$res"
    done
  done
  echo
  echo "Medians over $ROUNDS round(s):"
  echo
  echo "| protocol | delivery p50 ms | p99 ms | max ms | server RSS with tails live MiB | RSS per tail (bytes) | server CPU s |"
  echo "|---|---|---|---|---|---|---|"
  median_table "$res" | awk '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $3, $4, $5, $6, $7, $8 }'
fi
echo
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
