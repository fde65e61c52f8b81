// mem_links: cluster::links over the simulations' raft::mem_network (tests/support/sim), for the
// cluster simulation (lane_sim.h) and the replicator tests. Each frame becomes one mem_network packet:
// the channel byte, then the payload; channel 0 goes to the raft_transport() adapter's receiver
// (node_io), every other channel to set_receiver's.
// The network's faults (loss, delay, reordering, partitions) apply to both channels alike; a frame to a
// node that is down is lost, like one sent on a broken TCP connection.
//
// One per node incarnation: destroying it detaches the node from the network (what a crash does to its
// connections). Single-threaded, on the scheduler's thread, like everything in the simulation.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "cluster/links.h"
#include "support/sim/mem_network.h"

namespace weir::cluster::sim {

class mem_links final : public links {
 public:
  // `peers`: every other node; `peer_up(id)`: whether that node is running (what a TCP link would know
  // from its connection being up), for status().
  mem_links(raft::mem_network& net, std::uint64_t self, std::vector<std::uint64_t> peers,
            std::function<bool(std::uint64_t)> peer_up);
  ~mem_links() override;
  mem_links(const mem_links&) = delete;
  mem_links& operator=(const mem_links&) = delete;

  void set_receiver(receiver r) override { receiver_ = std::move(r); }
  void send(std::uint64_t to, std::uint8_t channel, std::span<const std::byte> payload) override;
  raft::transport& raft_transport() override;
  std::vector<link_status> status() const override;
  // Tests: while held, frames of `channel` for `to` wait here, in order, and go out when released (a
  // peer queue that does not drain, for that channel only).
  void hold(std::uint64_t to, std::uint8_t channel, bool held);
  // Tests: raft packets (channel 0) for `to` for which `lost` returns true are lost; nullptr: none.
  void lose_raft_packets(std::uint64_t to, std::function<bool(std::span<const std::byte>)> lost);

 private:
  class raft_adapter;
  void on_packet(raft::node_id from, std::span<const std::byte> packet);

  raft::mem_network& net_;
  std::uint64_t self_;
  std::vector<std::uint64_t> peers_;
  std::function<bool(std::uint64_t)> peer_up_;
  std::unique_ptr<raft::transport> endpoint_;
  std::unique_ptr<raft_adapter> raft_;
  receiver receiver_;
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> counts_;  // peer -> bytes sent, received
  std::map<std::pair<std::uint64_t, std::uint8_t>, std::vector<std::vector<std::byte>>> held_;
  std::map<std::uint64_t, std::function<bool(std::span<const std::byte>)>> lost_;
};

}  // namespace weir::cluster::sim
