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

TEST(memory_log, prefix_cuts_a_record_at_the_fork_point) {
  memory_log log;
  log.append(rec("abc", 3));
  log.append(rec("defg", 7));
  auto pre = log.prefix(stream_offset(5));
  ASSERT_EQ(pre.size(), 2u);
  EXPECT_EQ(pre[1].data.view(), "de");
  EXPECT_EQ(pre[1].end, 5u);
  memory_log fork(pre, stream_offset(5));
  fork.append(rec("X", 6));
  EXPECT_EQ(join(fork.read(stream_offset(0), 100, false)), "abcdeX");
}

TEST(memory_log, boundaries) {
  memory_log log;
  log.append(rec("a,", 2, 1));
  log.append(rec("b,c,", 6, 2));
  EXPECT_TRUE(log.is_boundary(stream_offset(0)));
  EXPECT_TRUE(log.is_boundary(stream_offset(2)));
  EXPECT_FALSE(log.is_boundary(stream_offset(3)));
  ASSERT_NE(log.record_at(stream_offset(2)), nullptr);
  EXPECT_EQ(log.record_at(stream_offset(2))->messages, 2u);
  EXPECT_EQ(log.record_at(stream_offset(3)), nullptr);
}

TEST(memory_log, replayed_fork_without_inherited_data_keeps_its_position) {
  memory_log fork({}, stream_offset(10));
  EXPECT_EQ(fork.tail().value(), 10u);
  fork.append(rec("x", 11));
  EXPECT_EQ(fork.tail().value(), 11u);
}

TEST(memory_log, find_record_finds_exactly_the_record_ending_there) {
  memory_log log;
  log.append(rec("abc", 3));
  log.append(rec("de", 5));
  log.append(rec("fghi", 9));
  for (std::uint64_t end : {3u, 5u, 9u}) {
    record* r = log.find_record(end);
    ASSERT_NE(r, nullptr) << end;
    EXPECT_EQ(r->end, end);
  }
  for (std::uint64_t end : {0u, 1u, 4u, 8u, 10u}) EXPECT_EQ(log.find_record(end), nullptr) << end;
  memory_log empty;
  EXPECT_EQ(empty.find_record(0), nullptr);
}

TEST(memory_log, find_record_agrees_with_a_linear_search_in_any_order) {
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
  // In order (as the hot tier evicts), then at random, hits and misses mixed.
  for (std::uint64_t e : ends) ASSERT_EQ(log.find_record(e)->end, e);
  for (int i = 0; i < 2000; ++i) {
    std::uint64_t probe = rng() % (end + 3);
    bool exists = std::find(ends.begin(), ends.end(), probe) != ends.end();
    record* r = log.find_record(probe);
    ASSERT_EQ(r != nullptr, exists) << probe;
    if (r) {
      ASSERT_EQ(r->end, probe);
    }
  }
}

TEST(memory_log, for_each_record_visits_inherited_then_own_records_in_order) {
  memory_log src;
  src.append(rec("abc", 3));
  src.append(rec("de", 5));
  memory_log fork(src.prefix(stream_offset(4)), stream_offset(4));
  fork.append(rec("XY", 6));
  std::vector<std::uint64_t> ends;
  fork.for_each_record([&](const record& r) { ends.push_back(r.end); });
  EXPECT_EQ(ends, (std::vector<std::uint64_t>{3, 4, 6}));
}

TEST(memory_log, cold_records_read_as_cold_slices_with_their_location) {
  memory_log log;
  log.append(rec("abc", 3));
  log.append(rec("defg", 7));
  log.append(rec("hi", 9));
  const disk_location at{4, 1000, 1, 30};
  record* r = log.find_record(7);
  ASSERT_NE(r, nullptr);
  r->data.at = at;
  r->data.buf.reset();

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

  const record* whole = log.record_at(stream_offset(3));
  ASSERT_NE(whole, nullptr);
  EXPECT_TRUE(whole->data.cold());
  EXPECT_EQ(whole->data.at, at);

  auto pre = log.prefix(stream_offset(5));  // a fork point inside the cold record
  ASSERT_EQ(pre.size(), 2u);
  EXPECT_TRUE(pre[1].data.cold());
  EXPECT_EQ(pre[1].data.at, at);
  EXPECT_EQ(pre[1].data.begin, 0u);
  EXPECT_EQ(pre[1].data.size, 2u);
  EXPECT_EQ(pre[1].end, 5u);
}

TEST(memory_log, whole_record_reads_keep_cold_records_whole) {
  memory_log log;
  log.append(rec("a,", 2, 1));
  log.append(rec("b,c,", 6, 2));
  record* r = log.find_record(6);
  r->data.at = disk_location{2, 40, 0, 12};
  r->data.buf.reset();
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
