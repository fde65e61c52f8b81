# bench/jetstream/turns.sh: sourced by bench/compare --cluster --peers jetstream once its weir bench run
# is over, with the weir cluster still up. Starts a 3-node NATS JetStream cluster on 127.0.0.1 (its PIDs
# go into js_pids, which bench/compare's trap stops; its store dirs live under bench/compare's $work),
# then takes turns at each writer level of --js-writers: weir's cluster through node 1 (weir bench
# many-streams, W streams x W writers, 256 B appends) and JetStream through its node 1
# (bench/jetstream/publish.mjs, W writers on one stream of 3 replicas), the order alternating by round.
# Every turn is a line of raw/jetstream-turns.tsv; bench/jetstream/summary.py turns them into
# jetstream.json and a section of results.md.
#
# Uses bench/compare's: out, work, weir_bin, node_bin, nats_bin, cluster_ports, cluster_pids, js_pids,
# js_writers, js_secs, js_rounds, js_connections, js_procs, free_port, cpu_seconds.
# shellcheck shell=bash disable=SC2154  # those variables are bench/compare's

js_client_ports=()
js_route_ports=()
js_http_ports=()
for i in 1 2 3; do
  js_client_ports+=("$(free_port)")
  js_route_ports+=("$(free_port)")
  js_http_ports+=("$(free_port)")
done
for i in 1 2 3; do
  js_routes=""
  for j in 1 2 3; do
    [[ $j == "$i" ]] || js_routes+="${js_routes:+, }nats-route://127.0.0.1:${js_route_ports[j - 1]}"
  done
  # File storage under the run's temp dir. nats-server 2.9 has no setting for syncing each message
  # (its config parser rejects sync_interval): the file store writes each message to the OS and syncs
  # on a timer, while weir fdatasyncs its node log before a write is acknowledged.
  cat >"$work/jetstream-$i.conf" <<EOF
server_name: n$i
listen: 127.0.0.1:${js_client_ports[i - 1]}
http: 127.0.0.1:${js_http_ports[i - 1]}
jetstream { store_dir: "$work/jetstream-$i" }
cluster { name: weir-bench, listen: 127.0.0.1:${js_route_ports[i - 1]}, routes: [$js_routes] }
EOF
  "$nats_bin" -c "$work/jetstream-$i.conf" >"$out/raw/jetstream-node-$i.log" 2>&1 &
  js_pids+=($!)
done
# A node answers /healthz 200 once its JetStream is up and it has found the meta leader.
for i in 1 2 3; do
  for _ in $(seq 1 300); do
    if ! kill -0 "${js_pids[i - 1]}" 2>/dev/null; then
      echo "compare: jetstream node $i exited during start-up; log:" >&2
      cat "$out/raw/jetstream-node-$i.log" >&2
      exit 1
    fi
    curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:${js_http_ports[i - 1]}/healthz" && break
    sleep 0.1
  done
done
js_version="$("$nats_bin" --version 2>&1 | head -n 1)"
echo "compare: jetstream (pids ${js_pids[*]}, client ports ${js_client_ports[*]}); turns at writers $js_writers, $js_secs s each, $js_rounds round(s)" >&2

sum_cpu() {  # PID... -> CPU seconds of all of them
  local total=0 pid
  for pid in "$@"; do total="$(awk -v a="$total" -v b="$(cpu_seconds "$pid")" 'BEGIN { printf "%.2f", a + b }')"; done
  echo "$total"
}

turns="$out/raw/jetstream-turns.tsv"
mkdir -p "$out/raw/jetstream-turns"
printf 'round\twriters\ttarget\tresult\tserver_cpu_s\tload1\tutc\n' >"$turns"
IFS=, read -r -a js_levels <<<"$js_writers"
# One JetStream target per --js-connections value: "jetstream" with a connection per writer (as weir
# bench has), "jetstream-cN" with the writers sharing N connections (a NATS client's usual way).
IFS=, read -r -a js_conn_values <<<"$js_connections"
js_targets=()
for c in "${js_conn_values[@]}"; do
  if [[ $c == per-writer ]]; then js_targets+=(jetstream); else js_targets+=("jetstream-c$c"); fi
done
for ((round = 1; round <= js_rounds; round++)); do
  js_order=(weir-cluster "${js_targets[@]}")
  if ((round % 2 == 0)); then
    js_order=()
    for ((k = ${#js_targets[@]} - 1; k >= 0; k--)); do js_order+=("${js_targets[k]}"); done
    js_order+=(weir-cluster)
  fi
  for w in "${js_levels[@]}"; do
    for t in "${js_order[@]}"; do
      load1="$(cut -d' ' -f1 /proc/loadavg)"
      utc="$(date -u +%H:%M:%S)"
      if [[ $t == weir-cluster ]]; then
        result="$out/raw/jetstream-turns/r$round-w$w-weir"
        cpu0="$(sum_cpu "${cluster_pids[@]}")"
        "$weir_bin" bench --target "weir-cluster=http://127.0.0.1:${cluster_ports[0]}" \
          --workloads many-streams --streams "$w" --writers "$w" --append-bytes 256 --many-secs "$js_secs" \
          --info "weir-cluster=the bench/compare cluster, every connection to node 1" \
          --out "$result" >"$result.log" 2>&1 || echo "compare: weir bench turn failed; see $result.log" >&2
        cpu1="$(sum_cpu "${cluster_pids[@]}")"
        result="$result/results.json"
      else
        conn=per-writer
        [[ $t == jetstream-c* ]] && conn="${t#jetstream-c}"
        result="$out/raw/jetstream-turns/r$round-w$w-$t.json"
        cpu0="$(sum_cpu "${js_pids[@]}")"
        "$node_bin" bench/jetstream/publish.mjs --servers "127.0.0.1:${js_client_ports[0]}" --writers "$w" \
          --secs "$js_secs" --warmup-secs 2 --bytes 256 --stream "BENCH_R${round}_W${w}_${t//-/_}" \
          --replicas 3 --connections "$conn" --procs "$js_procs" --create --delete \
          --server-pids "$(IFS=,; echo "${js_pids[*]}")" --out "$result" \
          2>"${result%.json}.log" || echo "compare: $t turn failed; see ${result%.json}.log" >&2
        cpu1="$(sum_cpu "${js_pids[@]}")"
      fi
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$w" "$t" "$result" \
        "$(awk -v a="$cpu1" -v b="$cpu0" 'BEGIN { printf "%.2f", a - b }')" "$load1" "$utc" >>"$turns"
      echo "compare: turn round $round, $w writers, $t done" >&2
    done
  done
done
js_peak_rss=""
for i in 1 2 3; do
  js_peak_rss+="${js_peak_rss:+, }n$i $(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/${js_pids[i - 1]}/status") MiB"
done
python3 bench/jetstream/summary.py "$turns" --out "$out" \
  --info "jetstream=$js_version, 3 nodes on 127.0.0.1 (cluster routes), file storage, one stream of 3 replicas per turn; no per-message fsync (2.9 has no sync_interval setting)" \
  --info "jetstream client=bench/jetstream/publish.mjs, nats $("$node_bin" -e 'console.log(require("./tests/node/node_modules/nats/package.json").version)'), $js_procs process(es), warm-up 2 s; target jetstream: a connection per writer; jetstream-cN: the writers share N connections" \
  --info "jetstream peak RSS=$js_peak_rss" \
  --info "weir-cluster turn=weir bench --target weir-cluster=<node 1> --workloads many-streams --streams W --writers W --append-bytes 256 --many-secs $js_secs" \
  --info "load average after the turns=$(cut -d' ' -f1-3 /proc/loadavg)"
