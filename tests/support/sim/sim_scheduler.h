// sim_scheduler: the deterministic heart of the cluster simulation. One queue of timed tasks for every
// node, the network and the disks, ordered by (time, insertion order); a manual clock that jumps to the
// next task's time; one seeded random generator. The same seed and the same calls give the same run.
//
// sim_executor is one node's view of it (an executor): halt() models the death of that node's process,
// every task it queued is dropped, and nothing it queues afterwards runs.
// Single-threaded.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <unordered_map>

#include "base/clock.h"
#include "raft/executor.h"

namespace weir::raft {

class sim_scheduler {
 public:
  using task = std::function<void()>;

  explicit sim_scheduler(std::uint64_t seed) : rng_(seed) {}

  std::int64_t now_ms() const { return clock_.mono_ms(); }
  std::mt19937_64& rng() { return rng_; }
  // A uniform integer in [lo, hi].
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < p; }

  // Queues `fn` at now + delay; returns an id for cancel().
  std::uint64_t at(std::chrono::milliseconds delay, task fn);
  bool cancel(std::uint64_t id);

  // Runs the earliest task (moving the clock to its time); false if none is queued.
  bool run_one();
  // Runs every task due up to `t` (inclusive), then sets the clock to `t`.
  void run_until(std::int64_t t);
  std::size_t queued() const { return tasks_.size(); }
  std::uint64_t tasks_run() const { return run_; }

 private:
  struct key {
    std::int64_t time;
    std::uint64_t seq;
    auto operator<=>(const key&) const = default;
  };
  manual_clock clock_{0};
  std::mt19937_64 rng_;
  std::map<key, task> tasks_;
  std::unordered_map<std::uint64_t, key> by_id_;
  std::uint64_t next_seq_ = 1;
  std::uint64_t run_ = 0;
};

class sim_executor final : public executor {
 public:
  explicit sim_executor(sim_scheduler& s) : s_(s), alive_(std::make_shared<bool>(true)) {}
  ~sim_executor() override { *alive_ = false; }

  std::int64_t now_ms() const override { return s_.now_ms(); }
  void post(task fn) override { add_timer(std::chrono::milliseconds(0), std::move(fn)); }
  timer_id add_timer(std::chrono::milliseconds delay, task fn) override;
  bool cancel_timer(timer_id id) override { return s_.cancel(id); }
  // The process died: its queued tasks are dropped when they come due; new ones are never run.
  void halt() { *alive_ = false; }
  bool halted() const { return !*alive_; }

 private:
  sim_scheduler& s_;
  std::shared_ptr<bool> alive_;
};

}  // namespace weir::raft
