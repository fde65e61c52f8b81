# bench/lib/local-cluster.sh: sourced by bench scripts that need a 3-node weir cluster on loopback.
#   local_cluster_start BIN   starts three `weir serve --threads 1` nodes of one cluster (extra flags in
#                             WEIR_FLAGS) in a fresh temp dir, `$work`; sets `pids` (their PIDs) and
#                             `urls` (their base URLs, comma-separated); an EXIT trap stops them by PID
#                             and removes `$work`.
# The caller waits for leader balancing itself (the scripts sleep 15 s).
local_cluster_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}

local_cluster_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

local_cluster_start() {
  local bin=$1 i
  work=$(mktemp -d)
  pids=()
  urls=""
  trap local_cluster_cleanup EXIT
  local ports=() pports=() peers=""
  for i in 1 2 3; do ports+=("$(local_cluster_free_port)"); pports+=("$(local_cluster_free_port)"); done
  for i in 1 2 3; do peers+="${peers:+,}$i=127.0.0.1:${pports[i-1]}"; done
  for i in 1 2 3; do
    # shellcheck disable=SC2086 # WEIR_FLAGS is a list of flags
    "$bin" serve --listen "127.0.0.1:${ports[i-1]}" --data-dir "$work/n$i" --node-id "$i" \
      --peer-listen "127.0.0.1:${pports[i-1]}" --peers "$peers" --threads 1 ${WEIR_FLAGS:-} \
      >"$work/n$i.log" 2>&1 &
    pids+=($!)
    urls+="${urls:+,}http://127.0.0.1:${ports[i-1]}"
  done
}
