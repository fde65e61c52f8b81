// shard_wal on an in-memory file system: a command's completion waits for its log record, completions
// keep the order of the commands, readers never see bytes that are not durable, and a failed write
// fails its command with 507 and makes the shard refuse writes.
#include "replica/shard_wal.h"

#include <gtest/gtest.h>

#include "storage/mem_env.h"
#include "streams/command_codec.h"
#include "unit/storage/test_util.h"

namespace weir::replica {
namespace {

using storage::testing::completion_queue;

class shard_wal_test : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(env_.create_dirs("/wal").has_value());
    auto rec = storage::recover_log(env_, "/wal", [](const storage::record_view&) { return status{}; });
    ASSERT_TRUE(rec.has_value());
    storage::log_options o;
    o.linger = std::chrono::microseconds(0);
    auto w = storage::log_writer::open(env_, "/wal", o, *rec, queue_.exec());
    ASSERT_TRUE(w.has_value());
    wal_ = std::make_unique<shard_wal>(std::move(*w));
  }

  // Applies `c` as stream_shard::execute does; the completion lands in results_.
  streams::outcome run(const streams::command& c) {
    wal_->before(c, sm_, 1000);
    streams::outcome o = sm_.apply(c);
    wal_->after(c, o, [this](durable_result& r) { results_.push_back(r); });
    return o;
  }
  void wait_for(std::size_t n) {
    ASSERT_TRUE(queue_.run_until([&] { return results_.size() >= n; })) << "completions " << results_.size();
  }
  streams::read_result read(const std::string& path) {
    streams::read_result rr = sm_.read(path, std::nullopt, 1 << 20);
    wal_->clamp(path, rr);
    return rr;
  }
  static std::string text(const streams::read_result& rr) {
    std::string out;
    for (const auto& s : rr.plan.slices) out += s.view();
    return out;
  }
  static streams::create_command create(const std::string& path) {
    streams::create_command c;
    c.path = path;
    c.content_type = "text/plain";
    c.now_ms = 1000;
    return c;
  }
  static streams::append_command append(const std::string& path, const std::string& bytes) {
    streams::append_command c;
    c.path = path;
    c.content_type = "text/plain";
    c.body.bytes = streams::make_chunk(bytes);
    c.now_ms = 1000;
    return c;
  }

  storage::mem_env env_;
  completion_queue queue_;
  streams::state_machine sm_;
  std::unique_ptr<shard_wal> wal_;
  std::vector<durable_result> results_;
};

TEST_F(shard_wal_test, a_create_is_invisible_until_durable) {
  run(create("/s"));
  EXPECT_TRUE(results_.empty());
  EXPECT_EQ(read("/s").code, streams::errc::not_found);
  wait_for(1);
  EXPECT_EQ(results_[0].failure, replica::errc::ok);
  EXPECT_TRUE(results_[0].o.created);
  EXPECT_EQ(read("/s").code, streams::errc::ok);
}

TEST_F(shard_wal_test, appended_bytes_are_visible_only_once_durable) {
  run(create("/s"));
  run(append("/s", "abc"));
  wait_for(2);
  run(append("/s", "defg"));
  // Applied in memory (the next command builds on it), not yet durable: readers see "abc".
  EXPECT_EQ(sm_.read("/s", std::nullopt, 100).plan.bytes, 7u);
  streams::read_result before = read("/s");
  EXPECT_EQ(text(before), "abc");
  EXPECT_EQ(before.meta->tail.value(), 3u);
  EXPECT_EQ(before.plan.next.value(), 3u);
  EXPECT_TRUE(before.plan.up_to_date);
  wait_for(3);
  EXPECT_EQ(text(read("/s")), "abcdefg");
  EXPECT_EQ(read("/s").meta->tail.value(), 7u);
}

TEST_F(shard_wal_test, views_kept_after_draining_never_clamp_a_later_read) {
  // Enough streams that idle views are swept while others are in flight.
  constexpr int streams = 3000;
  for (int i = 0; i < streams; ++i) run(create("/s" + std::to_string(i)));
  for (int i = 0; i < streams; ++i) run(append("/s" + std::to_string(i), "ab"));
  wait_for(2 * streams);
  // Deleted and re-created behind its idle view: the new stream's durable state is what counts.
  streams::delete_command d;
  d.path = "/s7";
  d.now_ms = 1000;
  run(d);
  run(create("/s7"));
  run(append("/s7", "xyz"));
  wait_for(2 * streams + 3);
  EXPECT_EQ(text(read("/s7")), "xyz");
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < streams; i += 3) run(append("/s" + std::to_string(i), "c"));
    // In flight: every stream still reads as its durable self.
    EXPECT_EQ(text(read("/s0")), "ab" + std::string(static_cast<std::size_t>(round), 'c'));
    EXPECT_EQ(text(read("/s1")), "ab");
    wait_for(2 * streams + 3 + static_cast<std::size_t>(round + 1) * (streams / 3));
  }
  for (int i = 0; i < streams; ++i) {
    if (i == 7) continue;
    EXPECT_EQ(text(read("/s" + std::to_string(i))), i % 3 == 0 ? "abccc" : "ab") << i;
  }
}

TEST_F(shard_wal_test, completions_keep_command_order_also_for_rejected_commands) {
  run(create("/s"));
  run(append("/s", "abc"));
  streams::outcome rejected = run(append("/missing", "x"));  // changes nothing, not logged
  EXPECT_FALSE(rejected.mutated);
  EXPECT_TRUE(results_.empty());  // waits behind the create and the append
  wait_for(3);
  EXPECT_TRUE(results_[0].o.created);
  EXPECT_TRUE(results_[1].o.appended);
  EXPECT_EQ(results_[2].o.code, streams::errc::not_found);
}

TEST_F(shard_wal_test, a_record_is_replayable_from_the_log) {
  run(create("/s"));
  run(append("/s", "abc"));
  wait_for(2);
  wal_.reset();  // stops the writer (syncs)
  streams::state_machine replayed;
  auto rec = storage::recover_log(env_, "/wal", [&](const storage::record_view& r) -> status {
    EXPECT_EQ(r.type, streams::command_record_type);
    auto c =
        streams::decode(std::string_view(reinterpret_cast<const char*>(r.payload.data()), r.payload.size()));
    EXPECT_TRUE(c.has_value());
    if (c) (void)replayed.apply(*c);
    return {};
  });
  ASSERT_TRUE(rec.has_value());
  streams::read_result rr = replayed.read("/s", std::nullopt, 100);
  ASSERT_EQ(rr.code, streams::errc::ok);
  EXPECT_EQ(text(rr), "abc");
}

TEST_F(shard_wal_test, a_full_disk_fails_the_append_with_507_and_refuses_later_writes) {
  run(create("/s"));
  wait_for(1);
  env_.set_capacity(1);  // the files already hold more: nothing more fits
  run(append("/s", std::string(1000, 'x')));
  run(append("/s", "y"));
  wait_for(3);
  EXPECT_EQ(results_[1].failure, replica::errc::storage_full);
  EXPECT_NE(results_[1].reason.find("insufficient storage"), std::string::npos);
  EXPECT_EQ(results_[2].failure, replica::errc::storage_full);  // applied on top of the failed one
  EXPECT_TRUE(wal_->failed());
  EXPECT_EQ(text(read("/s")), "");  // the durable view stays where the log is
}

}  // namespace
}  // namespace weir::replica
