#include "cluster/applied_waits.h"

#include <algorithm>

namespace weir::cluster {

namespace {
// A chain is a fork's ancestry, which cannot loop (a fork's source existed before it); the bound only
// keeps a damaged state from spinning the loop.
constexpr int max_links = 4096;
}  // namespace

applied_waits::applied_waits(raft::executor& ex, std::uint32_t groups, std::chrono::milliseconds timeout)
    : ex_(ex), timeout_(timeout), applied_(groups, 0), waiting_(groups) {}

applied_waits::~applied_waits() {
  *alive_ = false;
  for (auto& [id, c] : chains_)
    if (c.timer != 0) ex_.cancel_timer(c.timer);
}

void applied_waits::post(std::function<void()> fn) {
  ex_.post([alive = std::weak_ptr<bool>(alive_), fn = std::move(fn)] {
    if (auto a = alive.lock(); a && *a) fn();
  });
}

std::uint64_t applied_waits::applied_index(std::uint32_t group) const {
  return group < applied_.size() ? applied_[group] : 0;
}

void applied_waits::applied(std::uint32_t group, std::uint64_t index) {
  if (group >= applied_.size()) return;
  applied_[group] = std::max(applied_[group], index);
  auto& w = waiting_[group];
  const auto end = w.upper_bound(index);
  if (w.begin() == end) return;
  std::vector<std::uint64_t> ready;
  for (auto it = w.begin(); it != end; ++it) ready.push_back(it->second);
  w.erase(w.begin(), end);
  for (std::uint64_t id : ready) {
    auto c = chains_.find(id);
    if (c == chains_.end()) continue;
    c->second.at.reset();
    post([this, id] { advance(id); });
  }
}

void applied_waits::wait_chain(next_fn next, std::function<void(bool)> done) {
  const std::uint64_t id = next_id_++;
  chain& c = chains_[id];
  c.next = std::move(next);
  c.done = std::move(done);
  c.timer = ex_.add_timer(timeout_, [this, id, alive = std::weak_ptr<bool>(alive_)] {
    if (auto a = alive.lock(); !a || !*a) return;
    auto it = chains_.find(id);
    if (it == chains_.end()) return;
    it->second.timer = 0;
    finish(id, false);
  });
  post([this, id] { advance(id); });
}

void applied_waits::advance(std::uint64_t id) {
  for (int links = 0; links < max_links; ++links) {
    auto it = chains_.find(id);
    if (it == chains_.end()) return;
    std::optional<position> p = it->second.next();
    if (!p) break;
    if (p->group >= applied_.size() || applied_[p->group] >= p->index) continue;
    it->second.at = p;
    waiting_[p->group].emplace(p->index, id);
    return;
  }
  finish(id, true);
}

void applied_waits::finish(std::uint64_t id, bool ok) {
  auto it = chains_.find(id);
  if (it == chains_.end()) return;
  chain c = std::move(it->second);
  chains_.erase(it);
  if (c.timer != 0) ex_.cancel_timer(c.timer);
  if (c.at) {
    auto& w = waiting_[c.at->group];
    auto [b, e] = w.equal_range(c.at->index);
    for (auto k = b; k != e; ++k) {
      if (k->second == id) {
        w.erase(k);
        break;
      }
    }
  }
  c.done(ok);
}

}  // namespace weir::cluster
