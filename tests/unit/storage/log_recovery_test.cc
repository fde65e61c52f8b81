#include "storage/log_recovery.h"

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

std::string seg_path(std::uint64_t id) {
  return dir + "/" + format::segment_file_name(segment_id{id});
}

// Builds a segment file by hand: header + records with consecutive lsns from `base`.
std::vector<std::byte> make_segment(std::uint64_t id, std::uint64_t base,
                                    const std::vector<std::string>& payloads) {
  auto h = format::encode_segment_header({segment_id{id}, lsn{base}});
  std::vector<std::byte> out(h.begin(), h.end());
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    auto p = bytes_of(payloads[i]);
    std::vector<std::byte> rec(format::record_header_size + p.size());
    format::encode_record(rec, lsn{base + i}, 1, p);
    out.insert(out.end(), rec.begin(), rec.end());
  }
  return out;
}

std::size_t record_size(const std::string& payload) {
  return format::record_header_size + payload.size();
}

std::vector<std::string> payloads_of(const std::vector<replayed>& rs) {
  std::vector<std::string> out;
  for (auto& r : rs) out.push_back(r.payload);
  return out;
}

struct log_recovery : ::testing::Test {
  mem_env e;
  void SetUp() override { ASSERT_TRUE(e.create_dirs(dir)); }

  result<recovered_log> recover(std::vector<replayed>& out) { return testing::recover_into(e, dir, out); }

  // Appends through a real writer and returns once every append completed.
  void append_all(const std::vector<std::string>& payloads, log_options opts = {}) {
    std::vector<replayed> ignored;
    auto rec = recover(ignored);
    ASSERT_TRUE(rec) << rec.err().reason;
    completion_queue q;
    auto w = log_writer::open(e, dir, opts, *rec, q.exec());
    ASSERT_TRUE(w) << w.err().reason;
    std::size_t ok = 0;
    for (auto& p : payloads) (*w)->append(1, bytes_of(p), [&](result<append_ack> r) { ok += r.has_value(); });
    ASSERT_TRUE(q.run_until([&] { return ok == payloads.size(); }));
  }

  // Opens a writer on the recovered log and takes one checkpoint; returns the segments it reclaimed.
  result<std::vector<segment_id>> checkpoint_at(lsn covered, std::string blob, log_options opts = {},
                                                std::vector<segment_id> keep = {}) {
    std::vector<replayed> ignored;
    auto rec = recover(ignored);
    if (!rec) return rec.err();
    completion_queue q;
    auto w = log_writer::open(e, dir, opts, *rec, q.exec());
    if (!w) return w.err();
    std::optional<result<std::vector<segment_id>>> r;
    (*w)->checkpoint(covered, bytes_of(blob), std::move(keep),
                     [&](result<std::vector<segment_id>> x) { r = std::move(x); });
    EXPECT_TRUE(q.run_until([&] { return r.has_value(); }));
    if (!r) return make_error(errc::io_error, "no completion");
    return std::move(*r);
  }
};

TEST_F(log_recovery, empty_directory_recovers_to_an_empty_log) {
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec);
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(rec->next_lsn, lsn{1});
  EXPECT_TRUE(rec->start_new_segment);
  EXPECT_FALSE(rec->latest_checkpoint);
}

TEST_F(log_recovery, torn_tail_partial_record_is_truncated) {
  auto seg = make_segment(1, 1, {"one", "two", "three"});
  const std::size_t good = seg.size() - record_size("three");
  for (std::size_t cut = good + 1; cut < seg.size(); ++cut) {
    e.set_contents(seg_path(1),
                   std::vector<std::byte>(seg.begin(), seg.begin() + static_cast<std::ptrdiff_t>(cut)));
    std::vector<replayed> got;
    auto rec = recover(got);
    ASSERT_TRUE(rec) << "cut " << cut << ": " << rec.err().reason;
    EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"one", "two"})) << "cut " << cut;
    EXPECT_EQ(rec->truncated_bytes, cut - good);
    EXPECT_EQ(rec->next_lsn, lsn{3});
    EXPECT_EQ(e.contents(seg_path(1))->size(), good) << "the torn bytes are cut off the file";
  }
}

TEST_F(log_recovery, torn_tail_bad_crc_at_the_very_end_is_truncated_and_the_log_goes_on) {
  auto seg = make_segment(1, 1, {"one", "two", "three"});
  seg.back() ^= std::byte{0xFF};
  e.set_contents(seg_path(1), seg);
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"one", "two"}));

  append_all({"three again", "four"});
  got.clear();
  ASSERT_TRUE(recover(got));
  EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"one", "two", "three again", "four"}));
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].seq.value(), i + 1);
}

TEST_F(log_recovery, zero_filled_tail_is_cut_as_unused_room) {
  auto seg = make_segment(1, 1, {"one"});
  const std::size_t good = seg.size();
  seg.resize(seg.size() + 4096);  // a file extended but its pages never written, or a prepared segment
  e.set_contents(seg_path(1), seg);
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"one"}));
  EXPECT_EQ(rec->truncated_bytes, 0u);
  EXPECT_EQ(rec->prepared_bytes, 4096u);
  EXPECT_EQ(e.contents(seg_path(1))->size(), good);
}

TEST_F(log_recovery, a_short_zero_run_ends_a_torn_record_and_counts_as_torn) {
  auto seg = make_segment(1, 1, {"one"});
  const std::size_t good = seg.size();
  seg.resize(seg.size() + 100);  // a torn record's header of zeros (type 0: never valid)
  e.set_contents(seg_path(1), seg);
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_EQ(rec->truncated_bytes, 100u);
  EXPECT_EQ(rec->prepared_bytes, 0u);
  EXPECT_EQ(e.contents(seg_path(1))->size(), good);
}

TEST_F(log_recovery, a_torn_record_over_prepared_zeros_counts_the_record_as_torn_and_the_zeros_apart) {
  auto seg = make_segment(1, 1, {"one", "two", "three"});
  const std::size_t good = seg.size() - record_size("three");
  seg.resize(good + 10);            // the first 10 bytes of "three" reached the disk
  seg.resize(seg.size() + 8192);    // over the prepared zeros
  seg[good + 1] = std::byte{0x7F};  // (its CRC's second byte, never zero here)
  e.set_contents(seg_path(1), seg);
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"one", "two"}));
  EXPECT_LE(rec->truncated_bytes, 10u);
  EXPECT_GE(rec->truncated_bytes, 2u);
  EXPECT_EQ(rec->truncated_bytes + rec->prepared_bytes, 10u + 8192u);
  EXPECT_EQ(e.contents(seg_path(1))->size(), good);
}

TEST_F(log_recovery, damage_followed_by_a_valid_record_stops_with_file_and_offset) {
  auto seg = make_segment(1, 1, {"one", "two", "three"});
  const std::size_t two_at = format::segment_header_size + record_size("one");
  seg[two_at + format::record_header_size] ^= std::byte{1};  // flip a payload bit of "two"
  e.set_contents(seg_path(1), seg);
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_FALSE(rec);
  EXPECT_EQ(errc_of(rec.err()), errc::corruption);
  EXPECT_NE(rec.err().reason.find(seg_path(1)), std::string::npos) << rec.err().reason;
  EXPECT_NE(rec.err().reason.find("byte " + std::to_string(two_at)), std::string::npos) << rec.err().reason;
  EXPECT_EQ(e.contents(seg_path(1))->size(), seg.size()) << "nothing is truncated on corruption";
}

TEST_F(log_recovery, damage_in_an_older_segment_stops_even_at_its_end) {
  auto s1 = make_segment(1, 1, {"one", "two"});
  s1.back() ^= std::byte{0x10};
  e.set_contents(seg_path(1), s1);
  e.set_contents(seg_path(2), make_segment(2, 3, {"three"}));
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_FALSE(rec);
  EXPECT_EQ(errc_of(rec.err()), errc::corruption);
  const std::size_t two_at = format::segment_header_size + record_size("one");
  EXPECT_NE(rec.err().reason.find(seg_path(1) + " at byte " + std::to_string(two_at)), std::string::npos)
      << rec.err().reason;
}

TEST_F(log_recovery, a_record_with_a_foreign_lsn_is_corruption) {
  auto seg = make_segment(1, 1, {"one", "two"});
  auto stray = make_segment(1, 7, {"stray"});  // a valid record, but lsn 7 where 3 is due
  seg.insert(seg.end(), stray.begin() + format::segment_header_size, stray.end());
  seg.resize(seg.size() + 3);  // and a torn partial record after it
  e.set_contents(seg_path(1), seg);
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_FALSE(rec);
  EXPECT_NE(rec.err().reason.find("lsn 7, expected 3"), std::string::npos) << rec.err().reason;
}

TEST_F(log_recovery, missing_segment_and_lsn_gap_are_corruption) {
  e.set_contents(seg_path(1), make_segment(1, 1, {"one"}));
  e.set_contents(seg_path(3), make_segment(3, 2, {"two"}));
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_FALSE(rec);
  EXPECT_NE(rec.err().reason.find("segment 2 is missing"), std::string::npos) << rec.err().reason;

  ASSERT_TRUE(e.remove_file(seg_path(3)));
  e.set_contents(seg_path(2), make_segment(2, 5, {"five"}));
  got.clear();
  rec = recover(got);
  ASSERT_FALSE(rec);
  EXPECT_NE(rec.err().reason.find("starts at lsn 5, expected 2"), std::string::npos) << rec.err().reason;
}

TEST_F(log_recovery, torn_header_of_the_last_segment_is_removed) {
  e.set_contents(seg_path(1), make_segment(1, 1, {"one", "two"}));
  auto s2 = make_segment(2, 3, {});
  e.set_contents(seg_path(2), std::vector<std::byte>(s2.begin(), s2.begin() + 17));
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_FALSE(e.file_exists(seg_path(2)));
  EXPECT_EQ(rec->next_segment, segment_id{2});
  EXPECT_EQ(rec->next_lsn, lsn{3});
  append_all({"three"}, log_options{.segment_bytes = 64});  // rolls into a fresh segment 2
  got.clear();
  ASSERT_TRUE(recover(got));
  EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(got.back().pos.segment, segment_id{2});
}

TEST_F(log_recovery, checkpoint_replays_only_later_records_and_reclaims_older_segments) {
  log_options small{.segment_bytes = 100};
  std::vector<std::string> first;
  for (int i = 1; i <= 8; ++i) first.push_back("r" + std::to_string(i));
  append_all(first, small);  // 26 bytes each: 2 per 100-byte segment -> segments 1..4
  ASSERT_TRUE(e.file_exists(seg_path(4)));

  ASSERT_TRUE(checkpoint_at(lsn{5}, "state after r1..r5", small));
  EXPECT_FALSE(e.file_exists(seg_path(1)));  // lsn 1-2
  EXPECT_FALSE(e.file_exists(seg_path(2)));  // lsn 3-4
  EXPECT_TRUE(e.file_exists(seg_path(3)));   // lsn 5-6: 6 is not covered
  EXPECT_TRUE(e.file_exists(seg_path(4)));

  append_all({"r9"}, small);
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  ASSERT_TRUE(rec->latest_checkpoint);
  EXPECT_EQ(rec->latest_checkpoint->covered, lsn{5});
  EXPECT_EQ(testing::string_of(rec->latest_checkpoint->blob), "state after r1..r5");
  EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"r6", "r7", "r8", "r9"}));
  EXPECT_EQ(got.front().seq, lsn{6});

  // The restore hook sees the checkpoint before the first replayed record.
  std::vector<std::string> order;
  auto again = recover_log(
      e, dir,
      [&](const record_view& v) -> status {
        order.push_back(testing::string_of(v.payload));
        return {};
      },
      [&](const checkpoint& c) -> status {
        order.push_back("checkpoint@" + std::to_string(c.covered.value()));
        return {};
      });
  ASSERT_TRUE(again);
  EXPECT_EQ(order, (std::vector<std::string>{"checkpoint@5", "r6", "r7", "r8", "r9"}));
}

TEST_F(log_recovery, a_newer_checkpoint_replaces_the_older_one) {
  append_all({"a", "b", "c"});
  ASSERT_TRUE(checkpoint_at(lsn{1}, "one"));
  ASSERT_TRUE(checkpoint_at(lsn{3}, "three"));
  EXPECT_FALSE(e.file_exists(dir + "/" + format::checkpoint_file_name(lsn{1})));
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->latest_checkpoint->covered, lsn{3});
  EXPECT_TRUE(got.empty());
}

TEST_F(log_recovery, checkpoint_beyond_the_log_is_refused) {
  append_all({"a"});
  auto st = checkpoint_at(lsn{2}, "future");
  ASSERT_FALSE(st);
  EXPECT_EQ(errc_of(st.err()), errc::invalid_argument);
}

TEST_F(log_recovery, damaged_checkpoint_is_never_used) {
  append_all({"a", "b", "c"});
  ASSERT_TRUE(checkpoint_at(lsn{2}, "ab"));
  const std::string path = dir + "/" + format::checkpoint_file_name(lsn{2});
  auto bytes = *e.contents(path);
  bytes.back() ^= std::byte{1};
  e.set_contents(path, bytes);
  // Nothing was reclaimed (one segment), so the whole log replays without the checkpoint.
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_FALSE(rec->latest_checkpoint);
  EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(log_recovery, damaged_checkpoint_after_reclaim_stops_the_start) {
  log_options small{.segment_bytes = 100};
  append_all({"a", "b", "c", "d", "e"}, small);
  ASSERT_TRUE(checkpoint_at(lsn{4}, "abcd", small));
  ASSERT_FALSE(e.file_exists(seg_path(1)));
  const std::string path = dir + "/" + format::checkpoint_file_name(lsn{4});
  auto bytes = *e.contents(path);
  bytes[20] ^= std::byte{1};
  e.set_contents(path, bytes);
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_FALSE(rec);
  EXPECT_EQ(errc_of(rec.err()), errc::corruption);
  EXPECT_NE(rec.err().reason.find("records missing"), std::string::npos) << rec.err().reason;
}

TEST_F(log_recovery, leftover_checkpoint_temp_file_is_ignored) {
  append_all({"a", "b"});
  e.set_contents(dir + "/" + format::checkpoint_file_name(lsn{2}) + ".tmp", bytes_of("half written"));
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_FALSE(rec->latest_checkpoint);
  EXPECT_EQ(got.size(), 2u);
  ASSERT_TRUE(checkpoint_at(lsn{2}, "ab"));
  EXPECT_FALSE(e.file_exists(dir + "/" + format::checkpoint_file_name(lsn{2}) + ".tmp"));
}

TEST_F(log_recovery, checkpoint_ahead_of_a_lossy_log_continues_after_it) {
  // With fsync=never the snapshot may have seen records the log then lost in a crash.
  e.set_contents(seg_path(1), make_segment(1, 1, {"a", "b"}));
  ASSERT_TRUE(checkpoint_store(e, dir).write(lsn{4}, bytes_of("abcd")));
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(rec->next_lsn, lsn{5});
  EXPECT_TRUE(rec->start_new_segment);
  append_all({"e"});
  got.clear();
  rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].seq, lsn{5});
  EXPECT_EQ(got[0].pos.segment, segment_id{2});
}

TEST_F(log_recovery, a_visitor_error_stops_recovery) {
  e.set_contents(seg_path(1), make_segment(1, 1, {"a", "b"}));
  auto rec = recover_log(e, dir, [](const record_view& v) -> status {
    if (v.seq == lsn{2}) return make_error(errc::invalid_argument, "state machine rejected lsn 2");
    return {};
  });
  ASSERT_FALSE(rec);
  EXPECT_EQ(rec.err().reason, "state machine rejected lsn 2");
}

}  // namespace
}  // namespace weir::storage
