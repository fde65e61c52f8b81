// partition_on_loop: the base of the tests that build a partition directly, as a single node does: one
// partition on its own event loop (a thread), over an in-memory file system, opened by
// open_durable_store (recovery, then the log writer). open() takes what the partition is built with
// and a hook that runs on the loop once it is open (attach a cold tier...); close() stops it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "raft/loop_executor.h"
#include "replica/partition.h"
#include "replica/wal_recovery.h"
#include "storage/mem_env.h"

namespace weir::replica::testing {

class partition_on_loop : public ::testing::Test {
 protected:
  void TearDown() override { close(); }

  // Runs `fn` on the partition's loop and returns its result.
  template <class F>
  auto on_loop(F fn) {
    std::promise<decltype(fn())> p;
    loop_->post([&] { p.set_value(fn()); });
    return p.get_future().get();
  }
  // Opens the partition on a fresh loop; `opened` (on the loop) finishes its set-up. Returns whether
  // recovery succeeded (recovered_ holds what it did).
  bool open_partition(partition_host& host, partition_options o, wal_options wo,
                      const std::function<void()>& opened = {}) {
    loop_ = std::make_unique<io::event_loop>(0);
    ex_ = std::make_unique<raft::loop_executor>(*loop_);
    thread_ = std::thread([l = loop_.get()] { l->run(); });
    return on_loop([&] {
      part_ = std::make_unique<partition>(*ex_, clock_, o, host);
      std::vector<partition*> parts{part_.get()};
      auto rec = open_durable_store(env_, wo, parts, readers_);
      EXPECT_TRUE(rec.has_value()) << rec.err().reason;
      if (!rec) return false;
      recovered_ = *rec;
      if (opened) opened();
      return true;
    });
  }
  void close() {
    if (!loop_) return;
    on_loop([&] {
      part_->stop();
      part_.reset();
      return 0;
    });
    loop_->stop();
    thread_.join();
    loop_.reset();
    readers_.clear();
  }
  // Submits `c` and waits for its completion.
  durable_result submit(const streams::command& c) {
    std::promise<durable_result> p;
    loop_->post([&] { (void)part_->submit(c, [&](durable_result& r) { p.set_value(r); }); });
    return p.get_future().get();
  }

  storage::mem_env env_;
  manual_clock clock_;
  std::unique_ptr<io::event_loop> loop_;
  std::unique_ptr<raft::loop_executor> ex_;  // the partition's executor: loop_
  std::thread thread_;
  std::unique_ptr<partition> part_;
  segment_readers readers_;
  wal_recovery_stats recovered_;
};

}  // namespace weir::replica::testing
