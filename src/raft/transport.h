// transport: one node's end of its links to the other nodes. One link per pair of nodes (peer_links: a
// connection per lane) carries the frames of every group (wire_format.h); node_io batches the frames of
// one loop turn into one send per peer and lane (an urgent lane and a bulk lane).
//
// Delivery promise (what raft needs and TCP gives): a send may be lost (the link is down), but what
// arrives arrives whole, as the bytes that were sent. The in-memory fake may also reorder packets,
// which raft tolerates and which makes the simulation harsher than TCP.
// Single-threaded: called on the owning node's executor; the receiver is called there too.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "raft/types.h"

namespace weir::raft {

class transport {
 public:
  using receiver = std::function<void(node_id from, std::span<const std::byte> packet)>;

  virtual ~transport() = default;
  // Queues `packet` (one or more whole frames) for `to` in the bulk lane; never blocks, never calls
  // back inside.
  virtual void send(node_id to, std::vector<std::byte> packet) = 0;
  // Queues `packet` in the urgent lane (node_io's small raft messages: heartbeats, votes, results). A
  // transport with lanes (peer_links: a connection each) lets it wait for no bulk packet; each lane
  // keeps its order, with no order between them. node_io decides what may overtake what (node_io.h,
  // "Lanes").
  // Default: a transport without a queue of its own sends it like any other.
  virtual void send_urgent(node_id to, std::vector<std::byte> packet) { send(to, std::move(packet)); }
  // How many of the bulk packets sent to `to` are still queued (not yet completely handed to the
  // connection, nor dropped): the last bulk_queued(to) of them. Default: none (nothing waits here).
  virtual std::size_t bulk_queued(node_id /*to*/) const { return 0; }
  // Where packets for this node go. Set once, before the first packet can arrive.
  virtual void set_receiver(receiver r) = 0;
};

}  // namespace weir::raft
