#include "mem_links.h"

#include <algorithm>

namespace weir::cluster::sim {

// Channel 0 of the links, as the raft::transport node_io runs on.
class mem_links::raft_adapter final : public raft::transport {
 public:
  explicit raft_adapter(mem_links& owner) : owner_(owner) {}
  void send(raft::node_id to, std::vector<std::byte> packet) override { owner_.send(to.value(), 0, packet); }
  void set_receiver(receiver r) override { recv = std::move(r); }
  receiver recv;

 private:
  mem_links& owner_;
};

mem_links::mem_links(raft::mem_network& net, std::uint64_t self, std::vector<std::uint64_t> peers,
                     std::function<bool(std::uint64_t)> peer_up)
    : net_(net),
      self_(self),
      peers_(std::move(peers)),
      peer_up_(std::move(peer_up)),
      endpoint_(net.attach(raft::node_id(self))),
      raft_(std::make_unique<raft_adapter>(*this)) {
  std::sort(peers_.begin(), peers_.end());
  endpoint_->set_receiver(
      [this](raft::node_id from, std::span<const std::byte> packet) { on_packet(from, packet); });
}

mem_links::~mem_links() = default;

void mem_links::hold(std::uint64_t to, std::uint8_t channel, bool held) {
  if (held) {
    held_.try_emplace({to, channel});
    return;
  }
  auto it = held_.find({to, channel});
  if (it == held_.end()) return;
  auto frames = std::move(it->second);
  held_.erase(it);
  for (const auto& f : frames) send(to, channel, f);
}

void mem_links::lose_raft_packets(std::uint64_t to, std::function<bool(std::span<const std::byte>)> lost) {
  if (lost) {
    lost_[to] = std::move(lost);
  } else {
    lost_.erase(to);
  }
}

void mem_links::send(std::uint64_t to, std::uint8_t channel, std::span<const std::byte> payload) {
  if (auto it = lost_.find(to); channel == 0 && it != lost_.end() && it->second(payload)) return;
  if (auto it = held_.find({to, channel}); it != held_.end()) {
    it->second.emplace_back(payload.begin(), payload.end());
    return;
  }
  std::vector<std::byte> packet;
  packet.reserve(payload.size() + 1);
  packet.push_back(std::byte{channel});
  packet.insert(packet.end(), payload.begin(), payload.end());
  counts_[to].first += packet.size();
  endpoint_->send(raft::node_id(to), std::move(packet));
}

raft::transport& mem_links::raft_transport() {
  return *raft_;
}

void mem_links::on_packet(raft::node_id from, std::span<const std::byte> packet) {
  if (packet.empty()) return;
  counts_[from.value()].second += packet.size();
  const auto channel = std::to_integer<std::uint8_t>(packet[0]);
  const auto payload = packet.subspan(1);
  if (channel == 0 && raft_->recv) {
    raft_->recv(from, payload);
  } else if (receiver_) {
    receiver_(from.value(), channel, payload);
  }
}

std::vector<links::link_status> mem_links::status() const {
  std::vector<link_status> out;
  for (std::uint64_t p : peers_) {
    link_status s;
    s.peer = p;
    const bool up = peer_up_(p) && net_.connected(raft::node_id(self_), raft::node_id(p));
    s.out_connected = up;
    s.in_connected = up;
    if (auto it = counts_.find(p); it != counts_.end()) {
      s.bytes_sent = it->second.first;
      s.bytes_received = it->second.second;
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace weir::cluster::sim
