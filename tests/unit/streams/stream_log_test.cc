#include "streams/stream_log.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace weir::streams
