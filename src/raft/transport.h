// transport: one node's end of its links to the other nodes. One link (one connection, later) per pair
// of nodes carries the frames of every group (wire_format.h); node_io batches the frames of one loop
// turn into one send per peer.
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
  // Queues `packet` (one or more whole frames) for `to`; never blocks, never calls back inside.
  virtual void send(node_id to, std::vector<std::byte> packet) = 0;
  // Where packets for this node go. Set once, before the first packet can arrive.
  virtual void set_receiver(receiver r) = 0;
};

}  // namespace weir::raft
