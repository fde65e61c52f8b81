// partition_on_loop: the base of the tests that build a partition directly, as a single node does: one
// partition on its own event loop (a thread), over an in-memory file system, opened by
// open_durable_store (recovery, then the log writer). open() takes what the partition is built with
// and a hook that runs on the loop once it is open (attach a cold tier...); close() stops it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "raft/loop_executor.h"
#include "replica/partition.h"
#include "replica/wal_recovery.h"
#include "storage/mem_env.h"
#include "tier/hot_tier.h"
#include "unit/replica/checkpointed.h"

namespace weir::replica::testing {

// A host that needs nothing from its partition.
struct quiet_host final : partition_host {
  void on_durable(const streams::outcome&) override {}
  void on_rebuilt() override {}
  void on_writes_resumed() override {}
};

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
  // A reader's catch-up of `path` on `p` (a partition on loop_) from offset 0 to its tail in `chunk`-byte
  // reads, as the server reads: chunks from memory, from the log's segments and from objects, each
  // continuing where the last ended. Each chunk read goes into `chunks` when given; a failure, a read
  // that makes no progress or too many reads end the text with a <reason>.
  std::string read_through(partition& p, const std::string& path, std::size_t chunk,
                           std::vector<std::string>* chunks = nullptr) {
    std::string out;
    streams::stream_offset at(0);
    for (int n = 0; n < 10'000; ++n) {
      std::promise<std::pair<streams::read_result, std::string>> done;
      loop_->post([&] {
        streams::read_result rr = p.read_planned(path, at, chunk);
        if (!tier::hot_tier::has_cold(rr.plan)) return done.set_value({rr, ""});
        (void)p.read_cold(
            path, std::move(rr),
            [&](streams::read_result& got, status io) {
              done.set_value({got, io ? "" : io.err().reason});
            },
            false);
      });
      auto [rr, failed] = done.get_future().get();
      if (!failed.empty()) return out + "<read failed: " + failed + ">";
      std::string got;
      for (const auto& s : rr.plan.slices) got += s.view();
      out += got;
      if (chunks != nullptr && !got.empty()) chunks->push_back(std::move(got));
      if (rr.plan.next <= at && !rr.plan.up_to_date) return out + "<no progress>";
      at = rr.plan.next;
      if (rr.plan.up_to_date) return out;
    }
    return out + "<too many chunks>";
  }
  // Waits (10 s at most) until the partition has written a checkpoint and has none under way.
  bool checkpointed() { return testing::checkpointed(*loop_, *part_); }
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
