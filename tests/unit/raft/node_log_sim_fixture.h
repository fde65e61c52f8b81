// A node log on the simulation's fakes, for the node log's tests: mem_env, a seeded scheduler and a
// flusher that finishes each job 0-4 ms later; a crash (unsynced bytes lost, torn when asked) and a
// settle that runs the log until nothing is pending.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "raft/node_log.h"
#include "storage/mem_env.h"
#include "support/sim/delayed_flusher.h"
#include "support/sim/sim_scheduler.h"
#include "unit/raft/node_log_test_util.h"

namespace weir::raft::test_support {

struct sim_log_fixture {
  explicit sim_log_fixture(std::uint64_t seed, node_log_options o) : sched(seed), opts(std::move(o)) {}
  storage::mem_env env;
  sim_scheduler sched;
  node_log_options opts;
  std::unique_ptr<sim_executor> ex = std::make_unique<sim_executor>(sched);
  std::unique_ptr<delayed_flusher> flusher = make_flusher();

  std::unique_ptr<delayed_flusher> make_flusher() {
    return std::make_unique<delayed_flusher>(
        *ex, [this] { return std::chrono::milliseconds(sched.uniform(0, 4)); });
  }
  std::unique_ptr<node_log> open() {
    auto l = node_log::open(env, *flusher, log_path, opts);
    EXPECT_TRUE(l.has_value()) << l.err().reason;
    return l ? std::move(l).value() : nullptr;
  }
  void crash(std::optional<std::uint64_t> torn) {
    env.crash(torn);
    ex->halt();
    env.restart();
    ex = std::make_unique<sim_executor>(sched);
    flusher = make_flusher();
  }
  void settle(node_log& log) {
    for (int i = 0; i < 400 && (log.flushing() || log.has_pending() || log.compacting()); ++i) {
      log.flush();
      sched.run_until(sched.now_ms() + 5);
    }
  }
};

}  // namespace weir::raft::test_support
