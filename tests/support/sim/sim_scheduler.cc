#include "support/sim/sim_scheduler.h"

#include "base/assert.h"

namespace weir::raft {

std::uint64_t sim_scheduler::at(std::chrono::milliseconds delay, task fn) {
  WEIR_ASSERT(delay.count() >= 0, "negative delay {}", delay.count());
  const key k{clock_.mono_ms() + delay.count(), next_seq_++};
  tasks_.emplace(k, std::move(fn));
  by_id_.emplace(k.seq, k);
  return k.seq;
}

bool sim_scheduler::cancel(std::uint64_t id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  tasks_.erase(it->second);
  by_id_.erase(it);
  return true;
}

bool sim_scheduler::run_one() {
  if (tasks_.empty()) return false;
  auto it = tasks_.begin();
  const key k = it->first;
  task fn = std::move(it->second);
  tasks_.erase(it);
  by_id_.erase(k.seq);
  if (k.time > clock_.mono_ms()) clock_.advance(std::chrono::milliseconds(k.time - clock_.mono_ms()));
  ++run_;
  fn();
  return true;
}

void sim_scheduler::run_until(std::int64_t t) {
  while (!tasks_.empty() && tasks_.begin()->first.time <= t) run_one();
  if (t > clock_.mono_ms()) clock_.advance(std::chrono::milliseconds(t - clock_.mono_ms()));
}

executor::timer_id sim_executor::add_timer(std::chrono::milliseconds delay, task fn) {
  return s_.at(delay, [alive = alive_, fn = std::move(fn)] {
    if (*alive) fn();
  });
}

}  // namespace weir::raft
