// Checkpoint reclaim (segments kept by the caller, gaps in the ids) and recovery from a checkpoint that
// only probes the headers of the segments it wholly covers.
#include <gtest/gtest.h>

#include <algorithm>

#include "storage/log_format.h"
#include "storage/log_recovery.h"
#include "storage/log_writer.h"
#include "test_util.h"

namespace weir::storage {
namespace {

using testing::bytes_of;
using testing::completion_queue;
using testing::counting_env;
using testing::replayed;

const std::string dir = "/data/core-0";
// 40-byte header + two 26-byte records (2-byte payloads) per segment: record 2k-1 and 2k live in segment k.
const log_options two_per_segment{.segment_bytes = 100};

std::string seg_path(std::uint64_t id) {
  return dir + "/" + format::segment_file_name(segment_id{id});
}

std::vector<std::uint64_t> ids_of(const std::vector<segment_id>& ids) {
  std::vector<std::uint64_t> out;
  for (auto id : ids) out.push_back(id.value());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> payloads_of(const std::vector<replayed>& rs) {
  std::vector<std::string> out;
  for (auto& r : rs) out.push_back(r.payload);
  return out;
}

// r1..rN: two-byte payloads, so the lsn is in the name.
std::vector<std::string> records(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i <= to; ++i) out.push_back((i < 10 ? "r" : "") + std::to_string(i));
  return out;
}

struct log_reclaim : ::testing::Test {
  mem_env mem;
  counting_env e{mem};
  completion_queue q;
  std::unique_ptr<log_writer> w;

  void SetUp() override { ASSERT_TRUE(mem.create_dirs(dir)); }

  result<recovered_log> recover(std::vector<replayed>& out) { return testing::recover_into(e, dir, out); }

  void open() {
    std::vector<replayed> ignored;
    auto rec = recover(ignored);
    ASSERT_TRUE(rec) << rec.err().reason;
    auto opened = log_writer::open(e, dir, two_per_segment, *rec, q.exec());
    ASSERT_TRUE(opened) << opened.err().reason;
    w = std::move(*opened);
  }

  void append(const std::vector<std::string>& payloads) {
    std::size_t ok = 0;
    for (auto& p : payloads) w->append(1, bytes_of(p), [&](result<append_ack> r) { ok += r.has_value(); });
    ASSERT_TRUE(q.run_until([&] { return ok == payloads.size(); }));
  }

  result<std::vector<segment_id>> checkpoint(lsn covered, std::vector<segment_id> keep = {}) {
    std::optional<result<std::vector<segment_id>>> r;
    w->checkpoint(covered, bytes_of("state@" + std::to_string(covered.value())), std::move(keep),
                  [&](result<std::vector<segment_id>> x) { r = std::move(x); });
    EXPECT_TRUE(q.run_until([&] { return r.has_value(); }));
    if (!r) return make_error(errc::io_error, "no completion");
    return std::move(*r);
  }

  // Segments 1..5 holding r1..r10, then a checkpoint at lsn 8 that keeps `keep`.
  void ten_records_then_checkpoint_at_8(std::vector<segment_id> keep) {
    open();
    append(records(1, 10));
    ASSERT_TRUE(mem.file_exists(seg_path(5)));
    ASSERT_FALSE(mem.file_exists(seg_path(6)));
    auto r = checkpoint(lsn{8}, std::move(keep));
    ASSERT_TRUE(r) << r.err().reason;
    w.reset();
  }
};

TEST_F(log_reclaim, a_checkpoint_removes_covered_segments_except_the_kept_ones_and_says_which) {
  open();
  append(records(1, 10));
  auto r = checkpoint(lsn{8}, {segment_id{2}, segment_id{3}});
  ASSERT_TRUE(r) << r.err().reason;
  EXPECT_EQ(ids_of(*r), (std::vector<std::uint64_t>{1, 4}));
  for (std::uint64_t id : {2, 3, 5}) EXPECT_TRUE(mem.file_exists(seg_path(id))) << id;
  for (std::uint64_t id : {1, 4}) EXPECT_FALSE(mem.file_exists(seg_path(id))) << id;

  // The next checkpoint keeps only 3: segment 2 goes now; the active segment never does.
  append(records(11, 11));  // segment 6
  r = checkpoint(lsn{11}, {segment_id{3}});
  ASSERT_TRUE(r) << r.err().reason;
  EXPECT_EQ(ids_of(*r), (std::vector<std::uint64_t>{2, 5}));
  EXPECT_TRUE(mem.file_exists(seg_path(3)));
  EXPECT_TRUE(mem.file_exists(seg_path(6)));
}

TEST_F(log_reclaim, a_failed_removal_is_retried_at_the_next_checkpoint) {
  open();
  append(records(1, 6));
  e.on_remove = [](const std::string& path) -> status {
    if (path.ends_with(format::segment_file_name(segment_id{1})))
      return make_error(errc::io_error, "EIO unlink " + path);
    return {};
  };
  auto r = checkpoint(lsn{4});
  ASSERT_TRUE(r) << "a removal failure never fails the checkpoint: " << r.err().reason;
  EXPECT_EQ(ids_of(*r), (std::vector<std::uint64_t>{2}));
  EXPECT_TRUE(mem.file_exists(seg_path(1)));

  e.on_remove = nullptr;
  r = checkpoint(lsn{4});
  ASSERT_TRUE(r) << r.err().reason;
  EXPECT_EQ(ids_of(*r), (std::vector<std::uint64_t>{1}));
  EXPECT_FALSE(mem.file_exists(seg_path(1)));
}

TEST_F(log_reclaim, recovery_after_reclaim_with_gaps_visits_only_records_after_the_checkpoint) {
  ten_records_then_checkpoint_at_8({segment_id{2}, segment_id{3}});  // left: 2, 3, 5
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  ASSERT_TRUE(rec->latest_checkpoint);
  EXPECT_EQ(rec->latest_checkpoint->covered, lsn{8});
  EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"r9", "10"}));
  EXPECT_EQ(got.front().seq, lsn{9});
  EXPECT_EQ(rec->next_lsn, lsn{11});
  EXPECT_EQ(rec->next_segment, segment_id{6});
  EXPECT_FALSE(rec->start_new_segment);

  // Every segment present is listed; the probed ones end where the next one begins.
  ASSERT_EQ(rec->segments.size(), 3u);
  const std::uint64_t full = format::segment_header_size + 2 * (format::record_header_size + 2);
  EXPECT_EQ(rec->segments[0].id, segment_id{2});
  EXPECT_EQ(rec->segments[0].base, lsn{3});
  EXPECT_EQ(rec->segments[0].last, lsn{4});
  EXPECT_EQ(rec->segments[0].size, full);
  EXPECT_EQ(rec->segments[1].id, segment_id{3});
  EXPECT_EQ(rec->segments[1].base, lsn{5});
  EXPECT_EQ(rec->segments[1].last, lsn{8}) << "bounded by segment 5's base: 4 was reclaimed";
  EXPECT_EQ(rec->segments[2].id, segment_id{5});
  EXPECT_EQ(rec->segments[2].last, lsn{10});

  // The writer continues, and knows the probed segments: a checkpoint keeping nothing reclaims them.
  open();
  append(records(11, 12));
  auto r = checkpoint(lsn{12});
  ASSERT_TRUE(r) << r.err().reason;
  EXPECT_EQ(ids_of(*r), (std::vector<std::uint64_t>{2, 3, 5}));
  w.reset();
  got.clear();
  rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(rec->next_lsn, lsn{13});
}

TEST_F(log_reclaim, recovery_reads_only_the_headers_of_covered_segments) {
  // Nothing reclaimed: every segment is kept, so each one is there to be (not) read.
  ten_records_then_checkpoint_at_8({segment_id{1}, segment_id{2}, segment_id{3}, segment_id{4}});
  e.reset_counts();
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"r9", "10"}));
  for (std::uint64_t id : {1, 2, 3, 4}) {
    EXPECT_EQ(e.bytes_read(seg_path(id)), format::segment_header_size) << "segment " << id;
  }
  // Segment 5's header is probed (it bounds segment 4), then the whole segment is scanned.
  EXPECT_EQ(e.bytes_read(seg_path(5)), format::segment_header_size + mem.contents(seg_path(5))->size());
  ASSERT_EQ(rec->segments.size(), 5u);
  EXPECT_EQ(rec->segments[3].last, lsn{8});

  // Without a checkpoint everything is read, as before.
  ASSERT_TRUE(mem.remove_file(dir + "/" + format::checkpoint_file_name(lsn{8})));
  e.reset_counts();
  got.clear();
  rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_EQ(got.size(), 10u);
  for (std::uint64_t id = 1; id <= 5; ++id) {
    EXPECT_EQ(e.bytes_read(seg_path(id)), mem.contents(seg_path(id))->size()) << "segment " << id;
  }
}

TEST_F(log_reclaim, the_segment_holding_the_first_record_after_the_checkpoint_is_scanned) {
  open();
  append(records(1, 10));
  auto r = checkpoint(lsn{7}, {segment_id{1}});  // segment 4 holds lsn 7 (covered) and 8 (not)
  ASSERT_TRUE(r) << r.err().reason;
  EXPECT_EQ(ids_of(*r), (std::vector<std::uint64_t>{2, 3}));
  w.reset();
  e.reset_counts();
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"r8", "r9", "10"}));
  EXPECT_EQ(e.bytes_read(seg_path(1)), format::segment_header_size);
  EXPECT_EQ(e.bytes_read(seg_path(4)), format::segment_header_size + mem.contents(seg_path(4))->size());
  ASSERT_EQ(rec->segments.size(), 3u);
  EXPECT_EQ(rec->segments[0].last, lsn{6}) << "bounded by segment 4's base";
  EXPECT_EQ(rec->segments[1].last, lsn{8}) << "scanned";
}

TEST_F(log_reclaim, a_crash_in_the_middle_of_reclaim_loses_nothing) {
  // The crash hits before the k-th segment removal, for every k (0: right after the checkpoint is durable).
  for (int survive = 0; survive <= 4; ++survive) {
    SCOPED_TRACE("removals before the crash: " + std::to_string(survive));
    mem_env m;
    counting_env ce(m);
    completion_queue cq;
    ASSERT_TRUE(m.create_dirs(dir));
    std::vector<replayed> got;
    auto rec = testing::recover_into(ce, dir, got);
    ASSERT_TRUE(rec);
    auto wr = log_writer::open(ce, dir, two_per_segment, *rec, cq.exec());
    ASSERT_TRUE(wr);
    std::size_t ok = 0;
    for (auto& p : records(1, 10)) (*wr)->append(1, bytes_of(p), [&](result<append_ack> r) { ok += !!r; });
    ASSERT_TRUE(cq.run_until([&] { return ok == 10; }));

    int removals = 0;
    ce.on_remove = [&](const std::string& path) -> status {
      if (!path.ends_with(".log")) return {};
      if (removals++ < survive) return {};
      m.crash();  // power loss: from here the writer's every call fails (env halted)
      return make_error(errc::io_error, "EIO unlink " + path);
    };
    std::optional<result<std::vector<segment_id>>> r;
    (*wr)->checkpoint(lsn{9}, bytes_of("state@9"), {}, [&](result<std::vector<segment_id>> x) { r = x; });
    ASSERT_TRUE(cq.run_until([&] { return r.has_value(); }));
    ASSERT_TRUE(*r) << r->err().reason;
    EXPECT_EQ((*r)->size(), static_cast<std::size_t>(std::min(survive, 4)));
    wr->reset();
    m.restart();

    got.clear();
    ce.on_remove = nullptr;
    rec = testing::recover_into(ce, dir, got);
    ASSERT_TRUE(rec) << rec.err().reason;
    ASSERT_TRUE(rec->latest_checkpoint);
    EXPECT_EQ(rec->latest_checkpoint->covered, lsn{9});
    EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"10"}));
    EXPECT_EQ(rec->next_lsn, lsn{11});
    EXPECT_EQ(rec->segments.size(), static_cast<std::size_t>(5 - std::min(survive, 4)));

    // The survivors of the interrupted reclaim go at the next checkpoint.
    completion_queue cq2;
    wr = log_writer::open(ce, dir, two_per_segment, *rec, cq2.exec());
    ASSERT_TRUE(wr) << wr.err().reason;
    r.reset();
    (*wr)->checkpoint(lsn{10}, bytes_of("state@10"), {}, [&](result<std::vector<segment_id>> x) { r = x; });
    ASSERT_TRUE(cq2.run_until([&] { return r.has_value(); }));
    ASSERT_TRUE(*r) << r->err().reason;
    EXPECT_EQ((*r)->size(), static_cast<std::size_t>(4 - std::min(survive, 4)));
    for (std::uint64_t id = 1; id <= 4; ++id) EXPECT_FALSE(m.file_exists(seg_path(id))) << id;
  }
}

TEST_F(log_reclaim, a_damaged_header_of_a_covered_segment_stops_the_start) {
  ten_records_then_checkpoint_at_8({segment_id{2}, segment_id{3}});
  auto bytes = *mem.contents(seg_path(3));
  bytes[30] ^= std::byte{1};  // inside the CRC'd part of the header
  mem.set_contents(seg_path(3), bytes);
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_FALSE(rec);
  EXPECT_EQ(errc_of(rec.err()), errc::corruption);
  EXPECT_NE(rec.err().reason.find(seg_path(3) + " at byte 0: bad segment header"), std::string::npos)
      << rec.err().reason;
  EXPECT_TRUE(got.empty());

  // A well-formed header naming another segment is just as fatal.
  auto other = format::encode_segment_header({segment_id{7}, lsn{5}});
  std::copy(other.begin(), other.end(), bytes.begin());
  mem.set_contents(seg_path(3), bytes);
  rec = recover(got);
  ASSERT_FALSE(rec);
  EXPECT_NE(rec.err().reason.find("header names segment 7"), std::string::npos) << rec.err().reason;
}

TEST_F(log_reclaim, a_missing_segment_after_the_checkpoint_is_corruption) {
  open();
  append(records(1, 10));
  ASSERT_TRUE(checkpoint(lsn{4}));  // reclaims 1 and 2; 3..5 hold lsn 5..10
  w.reset();
  ASSERT_TRUE(mem.remove_file(seg_path(4)));
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_FALSE(rec);
  EXPECT_EQ(errc_of(rec.err()), errc::corruption);
  EXPECT_NE(rec.err().reason.find("segment 4 is missing (have 3 and 5)"), std::string::npos)
      << rec.err().reason;

  // Segments 3 and 4 gone: the log would resume at lsn 9 where 5 is due.
  ASSERT_TRUE(mem.remove_file(seg_path(3)));
  got.clear();
  rec = recover(got);
  ASSERT_FALSE(rec);
  EXPECT_NE(rec.err().reason.find(seg_path(5) + " at byte 24: log starts at lsn 9"), std::string::npos)
      << rec.err().reason;
  EXPECT_NE(rec.err().reason.find("records missing"), std::string::npos) << rec.err().reason;
}

TEST_F(log_reclaim, a_damaged_checkpoint_after_reclaim_with_gaps_stops_the_start_and_names_it) {
  ten_records_then_checkpoint_at_8({segment_id{1}, segment_id{3}});  // left: 1, 3, 5
  const std::string path = dir + "/" + format::checkpoint_file_name(lsn{8});
  auto bytes = *mem.contents(path);
  bytes.back() ^= std::byte{1};
  mem.set_contents(path, bytes);
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_FALSE(rec) << "records 3-4 and 7-8 are gone with the checkpoint that held them";
  EXPECT_EQ(errc_of(rec.err()), errc::corruption);
  EXPECT_NE(rec.err().reason.find("segment 2 is missing"), std::string::npos) << rec.err().reason;
  EXPECT_NE(rec.err().reason.find("checkpoint " + path + " is damaged"), std::string::npos)
      << rec.err().reason;
}

TEST_F(log_reclaim, falling_back_to_an_older_checkpoint_whose_records_were_reclaimed_stops_the_start) {
  open();
  append(records(1, 10));
  ASSERT_TRUE(checkpoint(lsn{6}));  // reclaims 1..3
  w.reset();
  // An older checkpoint left behind (a crash before the newer one's write removed it).
  ASSERT_TRUE(checkpoint_store(mem, dir).write(lsn{2}, bytes_of("state@2")));
  const std::string newer = dir + "/" + format::checkpoint_file_name(lsn{6});
  ASSERT_TRUE(mem.file_exists(newer));
  auto bytes = *mem.contents(newer);
  bytes[20] ^= std::byte{1};
  mem.set_contents(newer, bytes);

  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_FALSE(rec) << "lsn 3..6 are in no checkpoint and no segment";
  EXPECT_EQ(errc_of(rec.err()), errc::corruption);
  EXPECT_NE(rec.err().reason.find("log starts at lsn 7 but the checkpoint covers only up to 2"),
            std::string::npos)
      << rec.err().reason;
  EXPECT_NE(rec.err().reason.find(newer + " is damaged"), std::string::npos) << rec.err().reason;
  EXPECT_TRUE(got.empty());
}

TEST_F(log_reclaim, a_torn_header_of_the_last_segment_after_covered_ones_is_removed) {
  ten_records_then_checkpoint_at_8({segment_id{2}, segment_id{3}});
  auto s6 = format::encode_segment_header({segment_id{6}, lsn{11}});
  mem.set_contents(seg_path(6), std::vector<std::byte>(s6.begin(), s6.begin() + 17));
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_FALSE(mem.file_exists(seg_path(6)));
  EXPECT_EQ(payloads_of(got), (std::vector<std::string>{"r9", "10"}));
  EXPECT_EQ(rec->next_segment, segment_id{6});
  EXPECT_EQ(rec->next_lsn, lsn{11});
}

TEST_F(log_reclaim, a_covered_segment_whose_successor_starts_before_it_is_corruption) {
  ten_records_then_checkpoint_at_8({segment_id{2}, segment_id{3}});
  // Segment 3 rewritten to claim a base before segment 2's: the bases must not go backwards.
  auto h = format::encode_segment_header({segment_id{3}, lsn{2}});
  auto bytes = *mem.contents(seg_path(3));
  std::copy(h.begin(), h.end(), bytes.begin());
  mem.set_contents(seg_path(3), bytes);
  std::vector<replayed> got;
  auto rec = recover(got);
  ASSERT_FALSE(rec);
  EXPECT_EQ(errc_of(rec.err()), errc::corruption);
  EXPECT_NE(rec.err().reason.find(seg_path(3) + " at byte 24"), std::string::npos) << rec.err().reason;
}

}  // namespace
}  // namespace weir::storage
