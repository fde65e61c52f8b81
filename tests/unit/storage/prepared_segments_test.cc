// Prepared segments (log_options::prepare_segments, segment_spares): the writer rolls onto files of zeros
// prepared ahead of time and writes over them; recovery cuts their unused zeros without calling them torn;
// a crash, a torn write or a failed batch in a prepared segment loses no acknowledged record.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "storage/log_format.h"
#include "storage/log_writer.h"
#include "storage/segment_spares.h"
#include "test_util.h"

namespace weir::storage {
namespace {

using testing::bytes_of;
using testing::completion_queue;
using testing::replayed;

constexpr const char* dir = "/data/core-0";

log_options prepared_options() {
  log_options o;
  o.prepare_segments = true;
  o.prepared_first_bytes = 4096;
  o.segment_bytes = 64 << 10;
  return o;
}

std::string payload(int i) {
  return "record-" + std::to_string(i) + std::string(300, 'x');
}

struct fixture {
  env& e;
  std::string where;
  completion_queue q;
  std::vector<result<append_ack>> acks;
  recovered_log last_recovery;

  std::unique_ptr<log_writer> open(log_options o = prepared_options()) {
    std::vector<replayed> ignored;
    auto rec = testing::recover_into(e, where, ignored);
    EXPECT_TRUE(rec) << (rec ? "" : rec.err().reason);
    last_recovery = *rec;
    auto w = log_writer::open(e, where, o, *rec, q.exec());
    EXPECT_TRUE(w) << (w ? "" : w.err().reason);
    return std::move(*w);
  }
  // Opens the log, writes payload(0) into its first segment (created as it is written) and waits until a
  // prepared segment is ready: the next append rolls onto it.
  std::unique_ptr<log_writer> open_with_spare() {
    auto w = open();
    EXPECT_TRUE(put(*w, payload(0)));
    EXPECT_TRUE(w->wait_for_prepared_segment());
    return w;
  }
  // Appends and waits for the outcome.
  result<append_ack> put(log_writer& w, const std::string& s) {
    const std::size_t before = acks.size();
    w.append(1, bytes_of(s), [this](result<append_ack> r) { acks.push_back(std::move(r)); });
    EXPECT_TRUE(q.run_until([&] { return acks.size() == before + 1; }));
    return acks.back();
  }
  std::vector<replayed> recover() {
    std::vector<replayed> out;
    auto rec = testing::recover_into(e, where, out);
    EXPECT_TRUE(rec) << (rec ? "" : rec.err().reason);
    if (rec) last_recovery = *rec;
    return out;
  }
};

std::uint64_t file_length(mem_env& e, segment_id id) {
  auto c = e.contents(join_path(dir, format::segment_file_name(id)));
  return c ? c->size() : 0;
}

TEST(segment_spares, spares_are_zeros_and_double_up_to_the_maximum) {
  mem_env e;
  ASSERT_TRUE(e.create_dirs(dir));
  e.set_contents(join_path(dir, segment_spares::file_name), bytes_of("left by a crash"));
  segment_spares s(e, dir, 1000, 3000);
  std::vector<std::uint64_t> sizes;
  for (int i = 0; i < 3; ++i) {
    s.request();
    ASSERT_TRUE(s.wait_ready(std::chrono::seconds(20)));
    auto sp = s.take();
    ASSERT_TRUE(sp.has_value());
    auto c = e.contents(sp->path);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->size(), sp->bytes);
    EXPECT_TRUE(std::all_of(c->begin(), c->end(), [](std::byte b) { return b == std::byte{0}; }));
    sizes.push_back(sp->bytes);
    ASSERT_TRUE(e.remove_file(sp->path));
  }
  EXPECT_EQ(sizes, (std::vector<std::uint64_t>{1000, 2000, 3000}));
  EXPECT_FALSE(s.take().has_value());
  EXPECT_EQ(s.prepared(), 3u);
}

TEST(segment_spares, a_failed_preparation_is_reported_and_tried_again_on_request) {
  mem_env e;
  ASSERT_TRUE(e.create_dirs(dir));
  e.set_capacity(500);
  segment_spares s(e, dir, 1000, 1000);
  s.request();
  EXPECT_FALSE(s.wait_ready(std::chrono::seconds(20)));
  EXPECT_EQ(s.failed(), 1u);
  EXPECT_FALSE(e.file_exists(join_path(dir, segment_spares::file_name)));
  e.set_capacity(std::nullopt);
  s.request();
  EXPECT_TRUE(s.wait_ready(std::chrono::seconds(20)));
}

TEST(prepared_segments, the_writer_rolls_onto_a_prepared_segment_and_a_clean_stop_cuts_its_zeros) {
  mem_env e;
  fixture f{e, dir};
  {
    auto w = f.open_with_spare();
    auto a = f.put(*w, payload(1));  // rolls onto the spare: 4096 zeros written over
    ASSERT_TRUE(a);
    EXPECT_EQ(a->pos.segment, segment_id{2});
    EXPECT_EQ(w->stats().prepared_segments, 1u);
    EXPECT_EQ(file_length(e, segment_id{2}), 4096u);
    ASSERT_TRUE(w->wait_for_prepared_segment());                      // the next one, asked for at the roll
    for (int i = 2; i < 40; ++i) ASSERT_TRUE(f.put(*w, payload(i)));  // past 4096: onto the next spare
    EXPECT_GE(w->stats().prepared_segments, 2u);
  }
  // Each segment left behind ends at its last record: only zeros were cut.
  auto got = f.recover();
  ASSERT_EQ(got.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(got[i].payload, payload(i));
  EXPECT_EQ(f.last_recovery.truncated_bytes, 0u);
  EXPECT_EQ(f.last_recovery.prepared_bytes, 0u);
  for (const auto& s : f.last_recovery.segments) EXPECT_EQ(file_length(e, s.id), s.size);
}

TEST(prepared_segments, a_crash_keeps_every_acknowledged_record_and_recovery_cuts_the_zeros_quietly) {
  mem_env e;
  fixture f{e, dir};
  {
    auto w = f.open_with_spare();
    for (int i = 1; i < 6; ++i) ASSERT_TRUE(f.put(*w, payload(i)));
    e.crash();
  }
  e.restart();
  auto got = f.recover();
  ASSERT_EQ(got.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(got[i].payload, payload(i));
  EXPECT_EQ(f.last_recovery.truncated_bytes, 0u);
  EXPECT_GT(f.last_recovery.prepared_bytes, 0u);
  // The log goes on where it ended, in the (now cut) segment recovery reopened, then on a new spare.
  auto w = f.open();
  ASSERT_TRUE(f.put(*w, payload(6)));
  ASSERT_TRUE(w->wait_for_prepared_segment());
  ASSERT_TRUE(f.put(*w, payload(7)));
  w.reset();
  got = f.recover();
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(got[7].payload, payload(7));
}

TEST(prepared_segments, a_torn_write_over_zeros_loses_only_the_unacknowledged_record) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    mem_env inner;
    testing::gated_env e(inner);
    fixture f{e, dir};
    {
      auto w = f.open_with_spare();
      for (int i = 1; i < 4; ++i) ASSERT_TRUE(f.put(*w, payload(i)));
      // A record written over the zeros, its fdatasync in flight when the power goes: a random prefix
      // of it reached the disk.
      e.close_gate();
      w->append(1, bytes_of(payload(4)), [&f](result<append_ack> r) { f.acks.push_back(std::move(r)); });
      ASSERT_TRUE(e.wait_blocked(1));
      inner.crash(seed);
      e.open_gate();
    }
    inner.restart();
    auto got = f.recover();
    ASSERT_GE(got.size(), 4u) << "seed " << seed;
    ASSERT_LE(got.size(), 5u) << "seed " << seed;
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].payload, payload(static_cast<int>(i)));
  }
}

TEST(prepared_segments, a_failed_batch_in_a_prepared_segment_is_undone_and_the_log_goes_on) {
  mem_env e;
  fixture f{e, dir};
  {
    auto w = f.open_with_spare();
    ASSERT_TRUE(f.put(*w, payload(1)));
    e.set_write_error(true);
    EXPECT_FALSE(f.put(*w, payload(99)));
    e.set_write_error(false);
    for (int i = 2; i < 30; ++i) ASSERT_TRUE(f.put(*w, payload(i)));
  }
  auto got = f.recover();
  ASSERT_EQ(got.size(), 30u);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(got[i].payload, payload(i));
}

TEST(prepared_segments, a_batch_larger_than_the_prepared_room_grows_the_segment) {
  mem_env e;
  fixture f{e, dir};
  const std::string big(20000, 'b');
  {
    auto w = f.open_with_spare();
    ASSERT_TRUE(f.put(*w, big));  // onto the 4096-byte spare, and past it
    ASSERT_TRUE(f.put(*w, payload(2)));
    e.crash();
  }
  e.restart();
  auto got = f.recover();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].payload, big);
  EXPECT_EQ(got[2].payload, payload(2));
}

TEST(prepared_segments, a_roll_cut_before_its_header_leaves_an_all_zero_segment_that_recovery_removes) {
  mem_env e;
  fixture f{e, dir};
  {
    auto w = f.open();
    ASSERT_TRUE(f.put(*w, payload(0)));
  }
  // As a crash right after the spare was renamed into place, before its header was written.
  e.set_contents(join_path(dir, format::segment_file_name(segment_id{2})), std::vector<std::byte>(8192));
  auto got = f.recover();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(f.last_recovery.truncated_bytes, 0u);
  EXPECT_EQ(f.last_recovery.prepared_bytes, 8192u);
  EXPECT_FALSE(e.file_exists(join_path(dir, format::segment_file_name(segment_id{2}))));
}

// The real file system: the prepared segment's length stays while the writer writes over it, so the
// fdatasync has no new length to commit; a clean stop leaves the file at its last record.
TEST(prepared_segments, on_disk_the_prepared_length_holds_while_written_and_is_cut_at_stop) {
  const std::string root =
      (std::filesystem::temp_directory_path() / ("weir-prepared-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(root);
  env& e = default_posix_env();
  ASSERT_TRUE(e.create_dirs(root));
  fixture f{e, root};
  const std::string seg2 = join_path(root, format::segment_file_name(segment_id{2}));
  {
    auto w = f.open_with_spare();
    ASSERT_TRUE(f.put(*w, payload(1)));
    EXPECT_EQ(std::filesystem::file_size(seg2), 4096u);
  }
  EXPECT_LT(std::filesystem::file_size(seg2), 4096u);
  auto got = f.recover();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].payload, payload(1));
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace weir::storage
