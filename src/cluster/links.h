// links: what the replicator needs from the connections to the other nodes: frames on numbered
// channels (0: raft's packets, through raft_transport(); 1: cluster messages), and a view of each link
// for the status endpoint. peer_links is the TCP implementation; the cluster simulation has an
// in-memory one. Single-threaded: called on the owning node's executor; receivers are called there too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "raft/transport.h"

namespace weir::cluster {

class links {
 public:
  using receiver =
      std::function<void(std::uint64_t from, std::uint8_t channel, std::span<const std::byte> payload)>;
  struct link_status {
    std::uint64_t peer = 0;
    bool out_connected = false;  // our connection to the peer is up (peer_links: both lanes')
    bool in_connected = false;   // the peer's connection to us is up (peer_links: either lane's)
    // Wire bytes (hello and headers included; with TLS, before encryption).
    std::uint64_t bytes_sent = 0, bytes_received = 0;
    std::uint64_t connects = 0;        // successful outgoing connects (peer_links: of either lane)
    std::uint64_t drops = 0;           // outgoing connections lost after they were up
    std::uint64_t dropped_frames = 0;  // frames lost: queue full, too large, cut by a drop
    // Peer-link TLS: connections to or from this peer closed because a certificate did not verify, named
    // another node, or the handshake failed on a TLS error.
    std::uint64_t tls_refused = 0;
    // Bytes queued for the peer now, and the longest a frame waited in the queue until it was fully
    // written (head-of-line blocking: a heartbeat behind megabytes of entries).
    std::uint64_t queued_bytes = 0;
    std::int64_t max_queue_ms = 0;
    // The longest a frame of the urgent lane (small raft messages: raft::transport::send_urgent) waited.
    std::int64_t max_urgent_queue_ms = 0;
    // Reads of the peer's connection that stopped at the read budget with more to read (the rest was
    // read on a later turn of the loop: peer_links::options::read_budget).
    std::uint64_t read_yields = 0;
  };

  virtual ~links() = default;
  // Where frames go (channel 0 goes to raft_transport()'s receiver instead, once one is set).
  virtual void set_receiver(receiver r) = 0;
  // Queues a frame for `to`; never blocks, never calls back inside. Lost if the link cannot carry it.
  virtual void send(std::uint64_t to, std::uint8_t channel, std::span<const std::byte> payload) = 0;
  // The same on the urgent lane, where the link has one (peer_links: a connection of its own, so it
  // waits for no bulk frame); small frames only, with no order against the bulk lane's. The default
  // is send().
  virtual void send_urgent(std::uint64_t to, std::uint8_t channel, std::span<const std::byte> payload) {
    send(to, channel, payload);
  }
  // The transport raft's node_io runs on: channel 0.
  virtual raft::transport& raft_transport() = 0;
  // One entry per peer (self excluded), ordered by id.
  virtual std::vector<link_status> status() const = 0;
  // Membership changes at run time (cluster/membership.h): link a node that joins, or move a peer to
  // another "HOST:PORT"; drop the link to a node that left (its frames are refused from then on). Never
  // call back inside. The defaults suit links that reach every node by id alone (the simulation's).
  virtual weir::status add_peer(std::uint64_t /*id*/, std::string_view /*address*/) { return {}; }
  virtual void remove_peer(std::uint64_t /*id*/) {}
  // Called on the executor (never inside a call of this interface) with the id of a node that is not a
  // peer and tried to link to this one, which refused it: the replicator tells a node it removed that it
  // left (docs/replication.md, "A removed node"). The default suits links that refuse no one.
  using stranger_handler = std::function<void(std::uint64_t id)>;
  virtual void set_stranger_handler(stranger_handler /*h*/) {}
  // Node `id` left the cluster by a membership decision: the incarnation remembered for it (peer_links'
  // incarnation book) is forgotten, so that the id may join again on a new data directory
  // (docs/replication.md, "A node that lost its data directory"). The default suits links without one.
  virtual void forget_incarnation(std::uint64_t /*id*/) {}
};

}  // namespace weir::cluster
