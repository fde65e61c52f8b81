// Disk full and I/O errors: a failed batch is not acknowledged, leaves no trace in the log, and the
// writer serves again once the fault is gone.
#include <thread>

#include <gtest/gtest.h>

#include "storage/log_format.h"
#include "storage/log_writer.h"
#include "test_util.h"

namespace weir::storage {
namespace {

using testing::bytes_of;
using testing::completion_queue;
using testing::replayed;

const std::string dir = "/data/core-0";

struct log_faults : ::testing::Test {
  mem_env e;
  completion_queue q;
  std::unique_ptr<log_writer> w;
  std::vector<result<append_ack>> acks;

  void open(log_options opts = {}) {
    std::vector<replayed> ignored;
    auto rec = testing::recover_into(e, dir, ignored);
    ASSERT_TRUE(rec) << rec.err().reason;
    auto lw = log_writer::open(e, dir, opts, *rec, q.exec());
    ASSERT_TRUE(lw) << lw.err().reason;
    w = std::move(*lw);
  }
  // Appends and waits for the completion.
  result<append_ack> append_wait(const std::string& payload) {
    std::size_t before = acks.size();
    w->append(1, bytes_of(payload), [this](result<append_ack> r) { acks.push_back(std::move(r)); });
    EXPECT_TRUE(q.run_until([&] { return acks.size() == before + 1; }));
    return acks.back();
  }
  std::vector<std::string> recovered() {
    std::vector<replayed> got;
    auto rec = testing::recover_into(e, dir, got);
    EXPECT_TRUE(rec) << rec.err().reason;
    std::vector<std::string> out;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].seq.value(), i + 1) << "lsns stay contiguous across failed batches";
      out.push_back(got[i].payload);
    }
    return out;
  }
};

TEST_F(log_faults, enospc_fails_the_batch_then_service_resumes_when_space_returns) {
  open();
  ASSERT_TRUE(append_wait("before"));
  const auto used = e.used_bytes();
  e.set_capacity(used + 10);  // room for a partial record only
  auto r = append_wait(std::string(100, 'x'));
  ASSERT_FALSE(r);
  EXPECT_EQ(errc_of(r.err()), errc::no_space);
  EXPECT_EQ(e.used_bytes(), used) << "the partial write was cut back";
  auto r2 = append_wait("still full");
  ASSERT_FALSE(r2);
  EXPECT_EQ(errc_of(r2.err()), errc::no_space);

  e.set_capacity(std::nullopt);
  auto ok = append_wait("after");
  ASSERT_TRUE(ok) << ok.err().reason;
  EXPECT_EQ(ok->seq, lsn{2}) << "the failed appends did not consume lsns";
  EXPECT_EQ(w->stats().failed_batches, 2u);
  w.reset();
  e.crash();
  e.restart();
  EXPECT_EQ(recovered(), (std::vector<std::string>{"before", "after"}));
}

// With fence_after_failure, the appends made after a failure fail without being written, even once
// space is back, until the caller resumes (it applied them on top of the failed ones).
TEST_F(log_faults, a_fence_fails_later_appends_until_resume) {
  log_options opts;
  opts.fence_after_failure = true;
  open(opts);
  ASSERT_TRUE(append_wait("before"));
  e.set_capacity(e.used_bytes() + 10);
  auto r = append_wait(std::string(100, 'x'));
  ASSERT_FALSE(r);
  EXPECT_EQ(errc_of(r.err()), errc::no_space);
  e.set_capacity(std::nullopt);
  const auto appends = e.append_count();
  auto fenced = append_wait("applied on top of the failed one");
  ASSERT_FALSE(fenced);
  EXPECT_EQ(errc_of(fenced.err()), errc::no_space) << "the fence reports the failure that raised it";
  EXPECT_EQ(e.append_count(), appends) << "a fenced append is not written";
  w->resume();
  auto ok = append_wait("after");
  ASSERT_TRUE(ok) << ok.err().reason;
  EXPECT_EQ(ok->seq, lsn{2});
  w.reset();
  e.crash();
  e.restart();
  EXPECT_EQ(recovered(), (std::vector<std::string>{"before", "after"}));
}

// The inline path (log_options::inline_after) fails, undoes, fences and resumes like the sync thread.
TEST_F(log_faults, a_failed_inline_append_is_undone_and_fences_later_appends) {
  log_options opts;
  opts.inline_after = 1;
  opts.fence_after_failure = true;
  open(opts);
  auto lone_wait = [&](const std::string& payload) {
    for (int i = 0; i < 200'000 && !w->idle(); ++i) std::this_thread::yield();
    EXPECT_TRUE(w->idle());
    std::size_t before = acks.size();
    w->append(
        1, bytes_of(payload), [this](result<append_ack> r) { acks.push_back(std::move(r)); }, true);
    EXPECT_TRUE(q.run_until([&] { return acks.size() == before + 1; }));
    return acks.back();
  };
  ASSERT_TRUE(lone_wait("before"));  // by the sync thread: the streak begins
  const auto inline_before = w->stats().inline_batches;
  e.fail_next_syncs(1);  // the inline batch's fdatasync fails; the undo's own sync succeeds
  auto r = lone_wait("doomed");
  ASSERT_FALSE(r);
  EXPECT_EQ(errc_of(r.err()), errc::io_error);
  EXPECT_EQ(w->stats().inline_batches, inline_before + 1) << "the failure was on the inline path";
  auto fenced = lone_wait("applied on top of the failed one");
  ASSERT_FALSE(fenced);
  EXPECT_EQ(errc_of(fenced.err()), errc::io_error) << "the fence reports the failure that raised it";
  w->resume();
  auto ok = lone_wait("after");
  ASSERT_TRUE(ok) << ok.err().reason;
  EXPECT_EQ(ok->seq, lsn{2}) << "the failed append did not consume an lsn";
  EXPECT_EQ(w->stats().failed_batches, 1u);
  w.reset();
  e.crash(42);  // even keeping torn unsynced bytes, "doomed" must not come back
  e.restart();
  EXPECT_EQ(recovered(), (std::vector<std::string>{"before", "after"}));
}

TEST_F(log_faults, enospc_while_rolling_undoes_the_new_segment) {
  open(log_options{.segment_bytes = 90});
  ASSERT_TRUE(append_wait("0123456789"));  // 40 + 34 = 74 bytes
  e.set_capacity(e.used_bytes() + 20);     // the next segment's 40-byte header does not fit
  auto r = append_wait("0123456789");
  ASSERT_FALSE(r);
  EXPECT_EQ(errc_of(r.err()), errc::no_space);
  EXPECT_FALSE(e.file_exists(dir + "/" + format::segment_file_name(segment_id{2})));
  e.set_capacity(std::nullopt);
  auto ok = append_wait("abcdefghij");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->pos.segment, segment_id{2});
  EXPECT_EQ(ok->seq, lsn{2});
  w.reset();
  EXPECT_EQ(recovered(), (std::vector<std::string>{"0123456789", "abcdefghij"}));
}

TEST_F(log_faults, fdatasync_eio_fails_the_batch_and_its_records_never_reappear) {
  open();
  ASSERT_TRUE(append_wait("one"));
  e.fail_next_syncs(1);  // the batch's fdatasync fails; the undo's own sync succeeds
  auto r = append_wait("doomed");
  ASSERT_FALSE(r);
  EXPECT_EQ(errc_of(r.err()), errc::io_error);
  ASSERT_TRUE(append_wait("two"));
  w.reset();
  e.crash(42);  // even keeping torn unsynced bytes, "doomed" must not come back
  e.restart();
  EXPECT_EQ(recovered(), (std::vector<std::string>{"one", "two"}));
}

TEST_F(log_faults, write_eio_fails_the_batch_and_the_next_one_succeeds) {
  open();
  e.set_write_error(true);
  auto r = append_wait("x");
  ASSERT_FALSE(r);
  EXPECT_EQ(errc_of(r.err()), errc::io_error);
  e.set_write_error(false);
  ASSERT_TRUE(append_wait("y"));
  w.reset();
  EXPECT_EQ(recovered(), (std::vector<std::string>{"y"}));
}

TEST_F(log_faults, a_failed_undo_poisons_the_writer_until_restart) {
  open();
  ASSERT_TRUE(append_wait("one"));
  e.fail_next_syncs(2);  // the batch's sync and the undo's sync both fail
  auto r = append_wait("two");
  ASSERT_FALSE(r);
  EXPECT_EQ(errc_of(r.err()), errc::poisoned) << "outcome unknown: " << r.err().reason;
  auto p = append_wait("three");
  ASSERT_FALSE(p);
  EXPECT_EQ(errc_of(p.err()), errc::poisoned);
  w.reset();
  e.crash();
  e.restart();
  EXPECT_EQ(recovered(), (std::vector<std::string>{"one"}));
  open();  // restart: recovery, then a healthy writer
  auto ok = append_wait("four");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->seq, lsn{2});
}

}  // namespace
}  // namespace weir::storage
