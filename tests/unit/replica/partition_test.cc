// The partition built directly, without HTTP or a node: its local commit path over an in-memory file
// system (a command completes only once durable, and its host hears of it first), its reads of data
// that left memory, its recovery from the log, and its refusal of writes after a failed log write.
#include "replica/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>

#include "unit/replica/partition_on_loop.h"
#include "unit/streams/command_builders.h"

namespace weir::replica {
namespace {

// Records what the partition tells its host.
struct recording_host final : partition_host {
  std::vector<streams::outcome> durable;
  int rebuilt = 0;
  int resumed = 0;
  void on_durable(const streams::outcome& o) override { durable.push_back(o); }
  void on_rebuilt() override { ++rebuilt; }
  void on_writes_resumed() override { ++resumed; }
};

using streams::testing::make_append;
using streams::testing::make_create;

std::string text(const streams::read_result& rr) {
  std::string out;
  for (const auto& s : rr.plan.slices) out += s.view();
  return out;
}

// One partition on its own loop (a thread), opened over `env` the way a single node opens its shards
// (open_durable_store: recovery, then the log writer).
class partition_test : public testing::partition_on_loop {
 protected:
  void SetUp() override {
    open();
    ASSERT_TRUE(opened_);
  }

  void open(std::size_t hot_bytes = 1 << 20) {
    partition_options o;
    o.hot_bytes = hot_bytes;
    wal_options wo;
    wo.data_dir = "/data";
    wo.sync = storage::sync_policy{};
    opened_ = open_partition(host_, o, wo);
  }

  // A read of `path` from offset 0, cold slices read back off the loop.
  std::string read_all(const std::string& path) {
    std::promise<std::string> p;
    loop_->post([&] {
      streams::read_result rr = part_->read_planned(path, streams::stream_offset(0), 64 << 20);
      if (!tier::hot_tier::has_cold(rr.plan)) return p.set_value(text(rr));
      const bool taken = part_->read_cold(
          path, std::move(rr),
          [&](streams::read_result& got, status io) {
            p.set_value(io ? text(got) : "read failed: " + io.err().reason);
          },
          true);
      if (!taken) p.set_value("read refused");
    });
    return p.get_future().get();
  }

  recording_host host_;
  bool opened_ = false;
};

TEST_F(partition_test, a_command_completes_once_durable_and_its_host_hears_first) {
  durable_result made = submit(make_create("/s"));
  EXPECT_EQ(made.failure, errc::ok);
  EXPECT_TRUE(made.o.created);
  durable_result added = submit(make_append("/s", "hello"));
  EXPECT_EQ(added.failure, errc::ok);
  EXPECT_TRUE(added.at.known());  // its bytes have a place in the log
  on_loop([&] {
    EXPECT_EQ(host_.durable.size(), 2u);
    EXPECT_TRUE(host_.durable[1].appended);
    EXPECT_EQ(part_->stream_count(), 1u);
    EXPECT_EQ(text(part_->read_visible("/s", streams::stream_offset(0), 1 << 20)), "hello");
    return 0;
  });
}

TEST_F(partition_test, a_rejected_command_changes_nothing_and_still_completes_in_order) {
  durable_result missing = submit(make_append("/nowhere", "x"));
  EXPECT_EQ(missing.failure, errc::ok);
  EXPECT_EQ(missing.o.code, streams::errc::not_found);
  on_loop([&] {
    EXPECT_EQ(part_->stream_count(), 0u);
    return 0;
  });
}

TEST_F(partition_test, records_evicted_from_memory_read_back_identical_from_the_log) {
  close();
  open(/*hot_bytes=*/4096);
  ASSERT_TRUE(opened_);
  ASSERT_EQ(submit(make_create("/big")).failure, errc::ok);
  std::string all;
  for (int i = 0; i < 64; ++i) {
    std::string rec(512, static_cast<char>('a' + i % 26));
    all += rec;
    ASSERT_EQ(submit(make_append("/big", rec)).failure, errc::ok);
  }
  EXPECT_GT(on_loop([&] { return part_->hot().evicted(); }), 0u);
  EXPECT_EQ(read_all("/big"), all);
  EXPECT_GT(on_loop([&] { return part_->cold_reads_done(); }), 0u);
}

TEST_F(partition_test, a_reopened_partition_recovers_every_acknowledged_record) {
  ASSERT_EQ(submit(make_create("/r")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/r", "one,")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/r", "two")).failure, errc::ok);
  close();
  open();
  ASSERT_TRUE(opened_);
  EXPECT_EQ(recovered_.records, 3u);
  EXPECT_EQ(read_all("/r"), "one,two");
  EXPECT_EQ(on_loop([&] { return part_->stream_count(); }), 1u);
}

TEST_F(partition_test, a_checkpoint_before_the_first_new_write_covers_what_recovery_replayed) {
  ASSERT_EQ(submit(make_create("/c")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/c", "one,")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/c", "two")).failure, errc::ok);
  close();
  open();
  ASSERT_TRUE(opened_);
  // A checkpoint right after the start (a reclaim asks for one): it must cover the three replayed
  // records, or the next start would replay them on top of it and append them twice.
  on_loop([&] {
    EXPECT_EQ(part_->wal().last_lsn(), storage::lsn{3});
    part_->request_checkpoint();
    return 0;
  });
  // Written by the log's sync thread: wait for its file (at most about 10 s).
  auto checkpoints = [&] {
    auto names = env_.list_dir("/data/wal/core-0");
    return names ? std::count_if(names->begin(), names->end(),
                                 [](const std::string& n) { return n.ends_with(".ckpt"); })
                 : 0;
  };
  for (int i = 0; i < 10'000 && checkpoints() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(checkpoints(), 1);
  close();
  open();
  ASSERT_TRUE(opened_);
  EXPECT_EQ(read_all("/c"), "one,two");
}

TEST_F(partition_test, a_failed_log_write_fails_the_command_and_refuses_writes) {
  ASSERT_EQ(submit(make_create("/f")).failure, errc::ok);
  env_.set_write_error(true);
  durable_result failed = submit(make_append("/f", "lost"));
  EXPECT_EQ(failed.failure, errc::storage_unavailable);
  EXPECT_EQ(on_loop([&] { return part_->write_failure(); }), std::optional<errc>(errc::storage_unavailable));
  // Readers never see the failed append: it was not durable.
  EXPECT_EQ(read_all("/f"), "");
  env_.set_write_error(false);
}

}  // namespace
}  // namespace weir::replica
