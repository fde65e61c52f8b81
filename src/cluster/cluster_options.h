// cluster_options: how a node takes part in a cluster (`weir serve --node-id --peer-listen --peers`).
// Without a node id the node runs alone, as before clusters existed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/result.h"

namespace weir::cluster {

struct peer_address {
  std::string host;
  std::uint16_t port = 0;
  bool empty() const { return host.empty() && port == 0; }
  bool operator==(const peer_address&) const = default;
};

struct cluster_options {
  std::uint64_t node_id = 0;  // 0: not in a cluster
  peer_address peer_listen;   // where this node accepts its peers' connections
  // How this node reaches every node of the cluster (its own entry included; it may differ from
  // peer_listen, e.g. through a proxy in a test).
  std::map<std::uint64_t, peer_address> peers;
  std::uint32_t groups = 64;  // raft groups; fixed when the data directory is created
  // Lanes (docs/replication.md, "Lanes"): group g runs on lane g % lanes, each lane with its own stream
  // shard, data log, node log and peer connections, lane l on core l modulo the node's threads. Fixed
  // when the cluster is created, like the group count: every node must have the same.
  std::uint32_t lanes = 1;
  bool balance_leaders = true;  // hand leaderships over so that every node leads about as many groups
  // Raft's election timeout (libraft randomizes each follower's to 1-2x this): a follower that hears
  // nothing of a group from its leader for that long stands for election, and a leader that hears from
  // no majority for that long steps down. Longer: a node stalled by an overloaded machine keeps its
  // groups; shorter: a dead leader is replaced sooner. Leaders send heartbeats every tenth of it.
  std::uint32_t election_timeout_ms = 1000;
  std::uint32_t heartbeat_ms() const { return election_timeout_ms / 10; }
  // Start without bootstrapping the groups: a new node that waits to be added to a running cluster
  // (POST /cluster/members on one of its nodes) and then catches up from the others' logs.
  bool join = false;
  // This node's data directory's incarnation (cluster_identity.h), carried in its peer-link hellos; set
  // at start from the identity file, not a setting. 0: none (tests that run links without a directory).
  std::uint64_t incarnation = 0;
  // Group snapshots (docs/replication.md, "Snapshots"): a group snapshots its state once it applied this
  // many entries, or this many bytes of entries, since its last snapshot; 0 entries: never (the node
  // log and memory then keep every entry).
  std::uint32_t snapshot_entries = 4096;
  std::uint64_t snapshot_bytes = 4u << 20;
  // Entries a group keeps after a snapshot, for followers a little behind (further behind, they get the
  // snapshot installed).
  std::uint32_t snapshot_trailing = 128;
  // A node-log segment closes at this many bytes (raft::node_log_options::segment_bytes). Stream records
  // point into the node log's segments, so this is also the unit in which their bytes leave the disk.
  std::uint64_t log_segment_bytes = 64u << 20;
  // Bytes of writes a node has proposed and not seen applied yet; further writes wait for their turn
  // (server/stream_shard, "admission"); 0: no limit.
  std::uint64_t proposal_bytes = 8u << 20;
  // The fork sweep (streams/fork_sweep.h, docs/replication.md "Forks"): a pass this often, in seconds,
  // over the fork references of the source groups this node leads, giving back those whose fork is gone
  // and whose release was lost; 0: no sweep.
  std::uint32_t fork_sweep_secs = 30;
  // Mutual TLS on the peer links (docs/replication.md, "Peer links"): this node's PEM certificate chain
  // and key, and the cluster CA that signs every node's certificate. All three or none; none: plain TCP.
  std::string peer_tls_cert, peer_tls_key, peer_tls_ca;
  bool enabled() const { return node_id != 0; }
  bool peer_tls() const { return !peer_tls_cert.empty(); }
};

// The limits validate() enforces.
inline constexpr std::size_t max_nodes = 7;
inline constexpr std::uint32_t max_groups = 4096;
inline constexpr std::uint32_t max_lanes = 64;
inline constexpr std::uint32_t min_election_timeout_ms = 200;  // heartbeats every 20 ms
inline constexpr std::uint32_t max_election_timeout_ms = 60'000;

// "1=127.0.0.1:5437,2=127.0.0.1:5438,3=127.0.0.1:5439" -> peers ("" -> none; spaces around entries are
// ignored). Errors (std::errc::invalid_argument) name the bad entry.
result<std::map<std::uint64_t, peer_address>> parse_peers(std::string_view text);
// "HOST:PORT" -> an address; "" -> the unset address (empty host, port 0).
result<peer_address> parse_peer_address(std::string_view text);
// The inverses: what parse_peers and parse_peer_address read back to the same value.
std::string format_peers(const std::map<std::uint64_t, peer_address>& peers);
std::string format_peer_address(const peer_address& a);

// Checks a whole configuration: the node id is one of the peers, ids > 0, at most 7 nodes, ports set,
// IPv4 hosts (or localhost), no address twice, groups in [1, 4096], lanes in [1, min(64, groups)], the
// election timeout in [200, 60000] ms, peer-tls-cert, -key and -ca all three or none. A configuration without
// a node id is valid only without peers, peer_listen and the peer-tls files. Errors
// (std::errc::invalid_argument) speak of the settings by their flag names (node-id, peers, peer-listen,
// raft-groups, raft-lanes, election-timeout-ms).
status validate(const cluster_options& o);

}  // namespace weir::cluster
