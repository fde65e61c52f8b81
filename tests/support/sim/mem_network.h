// mem_network: the in-memory network of the simulation. Every node attaches an endpoint (a transport);
// packets travel through the sim_scheduler with a per-link delay, and each link can drop, reorder,
// or be cut by a partition. A packet in flight when its link is cut is lost; a packet for a node that is
// down (no endpoint) is lost. Deterministic: all randomness comes from the scheduler's generator.
// Single-threaded (the scheduler's thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "raft/transport.h"
#include "support/sim/sim_scheduler.h"

namespace weir::raft {

struct link_faults {
  std::chrono::milliseconds min_delay{1};
  std::chrono::milliseconds max_delay{5};
  double drop = 0.0;     // probability that a packet is lost
  bool reorder = false;  // if false, packets on the link arrive in the order they were sent
};

class mem_network {
 public:
  explicit mem_network(sim_scheduler& s) : s_(s) {}

  // The endpoint of `self`; it stays attached until destroyed (the node went down).
  std::unique_ptr<transport> attach(node_id self);

  // Faults of the directed link from -> to (default: link_faults{}).
  void set_link(node_id from, node_id to, link_faults f) { links_[{from, to}].faults = f; }
  void set_all_links(link_faults f);
  // Cuts every link between `side` and the other nodes (both directions); replaces any partition.
  void partition(const std::set<node_id>& side);
  void heal() { side_.clear(); }
  bool connected(node_id a, node_id b) const;

  std::uint64_t packets_sent() const { return sent_; }
  std::uint64_t packets_lost() const { return lost_; }

 private:
  class endpoint;
  struct link {
    link_faults faults;
    std::int64_t last_arrival = 0;  // keeps FIFO order when reorder is off
  };
  void deliver(node_id from, node_id to, std::vector<std::byte> packet);

  sim_scheduler& s_;
  std::map<std::pair<node_id, node_id>, link> links_;
  std::map<node_id, endpoint*> endpoints_;
  std::set<node_id> side_;  // empty: no partition
  link_faults default_faults_;
  std::uint64_t sent_ = 0;
  std::uint64_t lost_ = 0;
};

}  // namespace weir::raft
