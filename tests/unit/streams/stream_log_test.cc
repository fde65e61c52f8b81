#include "streams/stream_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace weir::streams {
namespace {

record rec(std::string s, std::uint64_t end, std::uint32_t messages = 0) {
  auto c = make_chunk(std::move(s));
  return record{chunk_slice{c, 0, static_cast<std::uint32_t>(c->size())}, end, messages};
}

std::string join(const read_plan& p) {
  std::string out;
  for (const auto& s : p.slices) out.append(s.view());
  return out;
}

TEST(memory_log, reads_across_records_with_limit) {
  memory_log log;
  log.append(rec("abc", 3));
  log.append(rec("defg", 7));
  EXPECT_EQ(log.tail().value(), 7u);
  read_plan p = log.read(stream_offset(2), 3, false);
  EXPECT_EQ(join(p), "cde");
  EXPECT_EQ(p.next.value(), 5u);
  EXPECT_FALSE(p.up_to_date);
  p = log.read(p.next, 100, false);
  EXPECT_EQ(join(p), "fg");
  EXPECT_TRUE(p.up_to_date);
  p = log.read(stream_offset(7), 100, false);
  EXPECT_TRUE(p.slices.empty());
  EXPECT_TRUE(p.up_to_date);
}

TEST(memory_log, a_fork_sees_its_source_cut_at_the_fork_point) {
  auto src = std::make_shared<memory_log>();
  src->append(rec("abc", 3));
  src->append(rec("defg", 7));
  memory_log fork(src, stream_offset(5));
  fork.append(rec("X", 6));
  src->append(rec("hi", 9));  // after the fork point: never seen by the fork
  EXPECT_EQ(join(fork.read(stream_offset(0), 100, false)), "abcdeX");
  EXPECT_EQ(fork.record_count(), 1u);
  std::optional<record> cut = fork.record_at(stream_offset(3));
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->data.view(), "de");
  EXPECT_EQ(cut->end, 5u);
  EXPECT_TRUE(fork.is_boundary(stream_offset(5)));
  EXPECT_FALSE(fork.is_boundary(stream_offset(4)));
}

TEST(memory_log, forgotten_records_leave_reads_that_start_before_them_to_the_objects) {
  memory_log log;
  log.set_name("/s");
  log.append(rec("abc", 3));
  log.append(rec("defg", 7));
  log.append(rec("hi", 9));
  // Up to the last record ending at or before the offset (5 is inside "defg": only "abc" goes).
  EXPECT_EQ(log.forget_before(stream_offset(5)), 3u);
  EXPECT_EQ(log.held_from().value(), 3u);
  EXPECT_EQ(log.forget_before(stream_offset(2)), 0u);  // already gone
  EXPECT_EQ(log.forget_before(stream_offset(7)), 4u);
  EXPECT_EQ(log.held_from().value(), 7u);
  EXPECT_EQ(log.tail().value(), 9u);
  EXPECT_EQ(log.record_count(), 1u);
  // A read that starts in the forgotten bytes gets nothing but where they are, capped at the held part.
  read_plan p = log.read(stream_offset(1), 100, false);
  EXPECT_TRUE(p.slices.empty());
  ASSERT_TRUE(p.in_objects.has_value());
  EXPECT_EQ(p.in_objects->stream, "/s");
  EXPECT_EQ(p.in_objects->from.value(), 1u);
  EXPECT_EQ(p.in_objects->until.value(), 7u);
  EXPECT_EQ(p.next.value(), 1u);
  EXPECT_FALSE(p.up_to_date);
  EXPECT_EQ(log.read(stream_offset(1), 2, false).in_objects->until.value(), 3u);  // at most max_bytes
  // From the held part on, reads are as before.
  p = log.read(stream_offset(7), 100, false);
  EXPECT_FALSE(p.in_objects.has_value());
  EXPECT_EQ(join(p), "hi");
  // Everything forgotten: the tail stays.
  EXPECT_EQ(log.forget_before(stream_offset(9)), 2u);
  EXPECT_EQ(log.tail().value(), 9u);
  log.append(rec("j", 10));
  EXPECT_EQ(join(log.read(stream_offset(9), 100, false)), "j");
}

TEST(memory_log, a_fork_reading_its_sources_forgotten_bytes_is_sent_to_the_sources_objects) {
  auto src = std::make_shared<memory_log>();
  src->set_name("/src");
  src->append(rec("abc", 3));
  src->append(rec("defg", 7));
  memory_log fork(src, stream_offset(5));
  fork.set_name("/fork");
  fork.append(rec("X", 6));
  EXPECT_EQ(src->forget_before(stream_offset(3)), 3u);
  read_plan p = fork.read(stream_offset(0), 100, false);
  ASSERT_TRUE(p.in_objects.has_value());
  EXPECT_EQ(p.in_objects->stream, "/src");
  EXPECT_EQ(p.in_objects->until.value(), 3u);
  // The read after them goes on through the source's held records and the fork's own.
  p = fork.read(stream_offset(3), 100, false);
  EXPECT_FALSE(p.in_objects.has_value());
  EXPECT_EQ(join(p), "deX");
}

TEST(memory_log, the_records_of_the_oldest_segments_are_a_prefix) {
  memory_log log;
  // Two records restored with their bytes inline (no place on disk), then records in segments 3, 3, 4,
  // then one still in flight (no place yet).
  std::uint64_t end = 0;
  auto add = [&](std::string s, std::uint64_t segment) {
    end += s.size();
    record r = rec(std::move(s), end);
    if (segment != 0) r.data.at = disk_location{segment, end * 10, 0, 0};
    log.append(std::move(r));
  };
  add("aa", 0);
  add("bb", 0);
  add("cc", 3);
  add("dd", 3);
  add("ee", 4);
  add("ff", 0);
  EXPECT_EQ(log.first_segment(), 0u);  // the inline ones are older than any segment
  EXPECT_EQ(log.end_through_segment(0), stream_offset(4));
  EXPECT_EQ(log.end_through_segment(2), stream_offset(4));
  EXPECT_EQ(log.end_through_segment(3), stream_offset(8));
  EXPECT_EQ(log.end_through_segment(9), stream_offset(10));  // never the record in flight
  EXPECT_EQ(log.forget_before(log.end_through_segment(3)), 8u);
  EXPECT_EQ(log.first_segment(), 4u);
  EXPECT_EQ(log.end_through_segment(3), stream_offset(8));  // nothing of segment 3 left: held_from
  memory_log empty;
  EXPECT_FALSE(empty.first_segment());
  EXPECT_EQ(empty.end_through_segment(7), stream_offset(0));
}

TEST(memory_log, boundaries) {
  memory_log log;
  log.append(rec("a,", 2, 1));
  log.append(rec("b,c,", 6, 2));
  EXPECT_TRUE(log.is_boundary(stream_offset(0)));
  EXPECT_TRUE(log.is_boundary(stream_offset(2)));
  EXPECT_FALSE(log.is_boundary(stream_offset(3)));
  ASSERT_TRUE(log.record_at(stream_offset(2)).has_value());
  EXPECT_EQ(log.record_at(stream_offset(2))->messages, 2u);
  EXPECT_FALSE(log.record_at(stream_offset(3)).has_value());
}

TEST(memory_log, replayed_fork_without_inherited_data_keeps_its_position) {
  memory_log fork(nullptr, stream_offset(10));
  EXPECT_EQ(fork.tail().value(), 10u);
  fork.append(rec("x", 11));
  EXPECT_EQ(fork.tail().value(), 11u);
}

TEST(memory_log, set_location_finds_exactly_the_record_ending_there) {
  memory_log log;
  log.append(rec("abc", 3));
  log.append(rec("de", 5));
  log.append(rec("fghi", 9));
  for (std::uint64_t end : {3u, 5u, 9u})
    EXPECT_TRUE(log.set_location(end, disk_location{1, end, 0, 0})) << end;
  for (std::uint64_t end : {0u, 1u, 4u, 8u, 10u})
    EXPECT_FALSE(log.set_location(end, disk_location{1, 1, 0, 0}));
  // Each record got the location given for its own end.
  EXPECT_EQ(log.record_at(stream_offset(0))->data.at.offset, 3u);
  EXPECT_EQ(log.record_at(stream_offset(3))->data.at.offset, 5u);
  EXPECT_EQ(log.record_at(stream_offset(5))->data.at.offset, 9u);
  memory_log empty;
  EXPECT_FALSE(empty.set_location(0, disk_location{1, 1, 0, 0}));
  EXPECT_EQ(empty.drop_bytes(0), 0u);
}

TEST(memory_log, drop_bytes_agrees_with_a_linear_search_in_any_order) {
  std::mt19937 rng(7);
  memory_log log;
  std::vector<std::uint64_t> ends;
  std::uint64_t end = 0;
  for (int i = 0; i < 200; ++i) {
    std::size_t size = 1 + rng() % 5;
    end += size;
    log.append(rec(std::string(size, 'x'), end));
    ends.push_back(end);
  }
  // In order (as the hot tier locates), then at random, hits and misses mixed.
  for (std::uint64_t e : ends) ASSERT_TRUE(log.set_location(e, disk_location{1, e, 0, 0}));
  std::vector<std::uint64_t> dropped;
  for (int i = 0; i < 2000; ++i) {
    std::uint64_t probe = rng() % (end + 3);
    auto it = std::find(ends.begin(), ends.end(), probe);
    bool exists = it != ends.end();
    bool first = exists && std::find(dropped.begin(), dropped.end(), probe) == dropped.end();
    std::size_t size = exists ? probe - (it == ends.begin() ? 0 : *(it - 1)) : 0;
    ASSERT_EQ(log.drop_bytes(probe), first ? size : 0u) << probe;
    if (first) dropped.push_back(probe);
  }
}

TEST(memory_log, for_each_record_visits_only_own_records_in_order) {
  auto src = std::make_shared<memory_log>();
  src->append(rec("abc", 3));
  src->append(rec("de", 5));
  memory_log fork(src, stream_offset(4));
  fork.append(rec("XY", 6));
  std::vector<std::uint64_t> ends;
  fork.for_each_record([&](const record& r) { ends.push_back(r.end); });
  EXPECT_EQ(ends, (std::vector<std::uint64_t>{6}));
}

TEST(memory_log, cold_records_read_as_cold_slices_with_their_location) {
  memory_log log;
  log.append(rec("abc", 3));
  log.append(rec("defg", 7));
  log.append(rec("hi", 9));
  const disk_location at{4, 1000, 1, 30};
  ASSERT_TRUE(log.set_location(7, at));
  ASSERT_EQ(log.drop_bytes(7), 4u);

  read_plan p = log.read(stream_offset(1), 5, false);  // "bc" hot, then "def" cold
  ASSERT_EQ(p.slices.size(), 2u);
  EXPECT_FALSE(p.slices[0].cold());
  EXPECT_EQ(p.slices[0].view(), "bc");
  EXPECT_TRUE(p.slices[1].cold());
  EXPECT_EQ(p.slices[1].at, at);
  EXPECT_EQ(p.slices[1].begin, 0u);
  EXPECT_EQ(p.slices[1].size, 3u);
  EXPECT_EQ(p.bytes, 5u);
  EXPECT_EQ(p.next.value(), 6u);

  p = log.read(stream_offset(5), 100, false);  // from inside the cold record
  ASSERT_EQ(p.slices.size(), 2u);
  EXPECT_TRUE(p.slices[0].cold());
  EXPECT_EQ(p.slices[0].at, at);
  EXPECT_EQ(p.slices[0].begin, 2u);
  EXPECT_EQ(p.slices[0].size, 2u);
  EXPECT_EQ(p.slices[1].view(), "hi");
  EXPECT_TRUE(p.up_to_date);

  std::optional<record> whole = log.record_at(stream_offset(3));
  ASSERT_TRUE(whole.has_value());
  EXPECT_TRUE(whole->data.cold());
  EXPECT_EQ(whole->data.at, at);
}

TEST(memory_log, a_fork_point_inside_a_cold_record_cuts_its_slice) {
  auto src = std::make_shared<memory_log>();
  src->append(rec("abc", 3));
  src->append(rec("defg", 7));
  const disk_location at{4, 1000, 1, 30};
  ASSERT_TRUE(src->set_location(7, at));
  ASSERT_EQ(src->drop_bytes(7), 4u);
  memory_log fork(src, stream_offset(5));
  read_plan p = fork.read(stream_offset(4), 100, false);
  ASSERT_EQ(p.slices.size(), 1u);
  EXPECT_TRUE(p.slices[0].cold());
  EXPECT_EQ(p.slices[0].at, at);
  EXPECT_EQ(p.slices[0].begin, 1u);
  EXPECT_EQ(p.slices[0].size, 1u);
  EXPECT_EQ(p.next.value(), 5u);
  EXPECT_TRUE(p.up_to_date);
}

TEST(memory_log, whole_record_reads_keep_cold_records_whole) {
  memory_log log;
  log.append(rec("a,", 2, 1));
  log.append(rec("b,c,", 6, 2));
  ASSERT_TRUE(log.set_location(6, disk_location{2, 40, 0, 12}));
  ASSERT_EQ(log.drop_bytes(6), 4u);
  read_plan p = log.read(stream_offset(0), 3, true);  // the second record does not fit
  ASSERT_EQ(p.slices.size(), 1u);
  EXPECT_EQ(p.next.value(), 2u);
  p = log.read(p.next, 1, true);  // at least one record, even over the limit
  ASSERT_EQ(p.slices.size(), 1u);
  EXPECT_TRUE(p.slices[0].cold());
  EXPECT_EQ(p.slices[0].size, 4u);
  EXPECT_EQ(p.slices[0].begin, 0u);
  EXPECT_EQ(p.next.value(), 6u);
}

}  // namespace
}  // namespace weir::streams
