#!/usr/bin/env bash
# Starts a 3-node weir cluster on this machine (docs/operations.md, "Cluster") and stops it on Ctrl-C.
# Builds nothing: runs $WEIR (default build/release/src/app/weir of this checkout).
#
#   node N (1..3): HTTP 127.0.0.1:4437..4439, peers 127.0.0.1:5437..5439,
#                  data $DATA/node-N, log $DATA/node-N.log  ($DATA default ./data/cluster)
#   HTTP_PORT / PEER_PORT: node 1's ports, if the defaults are taken (node N: +N-1)
#
# Extra arguments go to every node's `weir serve`, e.g. scripts/run-cluster.sh --threads 2 --raft-lanes 2 (a new cluster).
# If one node exits on its own, the script prints the end of its log and stops the others.
set -euo pipefail

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi

root=$(cd "$(dirname "$0")/.." && pwd)
WEIR=${WEIR:-$root/build/release/src/app/weir}
DATA=${DATA:-./data/cluster}
host=127.0.0.1
nodes=(1 2 3)
HTTP_PORT=${HTTP_PORT:-4437}
PEER_PORT=${PEER_PORT:-5437}
http_port() { echo $((HTTP_PORT + $1 - 1)); }
peer_port() { echo $((PEER_PORT + $1 - 1)); }
# Something accepts connections on port $1 of $host.
in_use() { (exec 3<>"/dev/tcp/$host/$1") 2>/dev/null; }

if [ ! -x "$WEIR" ]; then
  echo "run-cluster: no weir binary at $WEIR: build it (cmake --preset release &&" \
    "cmake --build build/release --target weir) or set WEIR=/path/to/weir" >&2
  exit 1
fi

for i in "${nodes[@]}"; do
  for port in "$(http_port "$i")" "$(peer_port "$i")"; do
    if in_use "$port"; then
      echo "run-cluster: $host:$port is in use (another cluster?); stop it or set HTTP_PORT / PEER_PORT" >&2
      exit 1
    fi
  done
done

peers=""
for i in "${nodes[@]}"; do peers+="${peers:+,}$i=$host:$(peer_port "$i")"; done

pids=()
# shellcheck disable=SC2317  # reached through the traps
stop() {
  trap - INT TERM EXIT
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
# Ctrl-C or TERM: stop the nodes by PID and wait for them (background jobs of a script start with
# SIGINT ignored, so the shell cannot count on the terminal's SIGINT reaching them).
trap 'echo; echo "run-cluster: stopping the nodes"; stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

mkdir -p "$DATA"
for i in "${nodes[@]}"; do
  mkdir -p "$DATA/node-$i"
  "$WEIR" serve --listen "$host:$(http_port "$i")" --data-dir "$DATA/node-$i" \
    --node-id "$i" --peer-listen "$host:$(peer_port "$i")" --peers "$peers" "$@" \
    >"$DATA/node-$i.log" 2>&1 &
  pids+=("$!")
done

# The end of node $1's log, after it exited with status $2.
report_exit() {
  echo "run-cluster: node $1 exited (status $2); the end of $DATA/node-$1.log:" >&2
  tail -n 20 "$DATA/node-$1.log" >&2 || true
}

# Each node's HTTP port accepts connections once the node has started (recovery done); a node that
# exits before is reported.
for i in "${nodes[@]}"; do
  pid=${pids[i - 1]}
  for _ in $(seq 300); do
    if in_use "$(http_port "$i")"; then break; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      status=0
      wait "$pid" || status=$?
      report_exit "$i" "$status"
      exit 1
    fi
    sleep 0.1
  done
done

echo "weir cluster: ${#nodes[@]} nodes ($WEIR)"
for i in "${nodes[@]}"; do
  echo "  node $i  http://$host:$(http_port "$i")  peers $host:$(peer_port "$i")  data $DATA/node-$i" \
    " log $DATA/node-$i.log  pid ${pids[i - 1]}"
done
echo "Ctrl-C stops them."

# Until Ctrl-C (the trap) or until a node exits on its own.
status=0
wait -n "${pids[@]}" || status=$?
for i in "${nodes[@]}"; do
  if ! kill -0 "${pids[i - 1]}" 2>/dev/null; then
    report_exit "$i" "$status"
    break
  fi
done
echo "run-cluster: stopping the other nodes" >&2
exit 1
