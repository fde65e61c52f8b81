#include "support/sim/mem_network.h"

#include <algorithm>

#include "base/assert.h"

namespace weir::raft {

class mem_network::endpoint final : public transport {
 public:
  endpoint(mem_network& net, node_id self) : net_(net), self_(self) {}
  ~endpoint() override { net_.endpoints_.erase(self_); }
  void send(node_id to, std::vector<std::byte> packet) override {
    net_.deliver(self_, to, std::move(packet));
  }
  void set_receiver(receiver r) override { receiver_ = std::move(r); }
  void receive(node_id from, std::span<const std::byte> packet) {
    if (receiver_) receiver_(from, packet);
  }

 private:
  mem_network& net_;
  node_id self_;
  receiver receiver_;
};

std::unique_ptr<transport> mem_network::attach(node_id self) {
  WEIR_ASSERT(!endpoints_.contains(self), "node {} attached twice", self.value());
  auto e = std::make_unique<endpoint>(*this, self);
  endpoints_[self] = e.get();
  return e;
}

void mem_network::set_all_links(link_faults f) {
  default_faults_ = f;
  for (auto& [k, l] : links_) l.faults = f;
}

void mem_network::partition(const std::set<node_id>& side) {
  side_ = side;
}

bool mem_network::connected(node_id a, node_id b) const {
  if (side_.empty()) return true;
  return side_.contains(a) == side_.contains(b);
}

void mem_network::deliver(node_id from, node_id to, std::vector<std::byte> packet) {
  ++sent_;
  auto [it, inserted] = links_.try_emplace({from, to});
  link& l = it->second;
  if (inserted) l.faults = default_faults_;
  if (!connected(from, to) || s_.chance(l.faults.drop)) {
    ++lost_;
    return;
  }
  std::int64_t arrival = s_.now_ms() + s_.uniform(l.faults.min_delay.count(), l.faults.max_delay.count());
  if (!l.faults.reorder) arrival = std::max(arrival, l.last_arrival);
  l.last_arrival = arrival;
  s_.at(std::chrono::milliseconds(arrival - s_.now_ms()), [this, from, to, p = std::move(packet)] {
    auto e = endpoints_.find(to);
    if (e == endpoints_.end() || !connected(from, to)) {
      ++lost_;
      return;
    }
    e->second->receive(from, p);
  });
}

}  // namespace weir::raft
