#include "bench/sse_workload.h"

#include <gtest/gtest.h>

namespace weir::bench {
namespace {

TEST(sse_workload, payload_has_the_exact_size_and_a_tag_that_parses_back) {
  for (std::size_t size : {32u, 512u, 4096u}) {
    const auto p = sse_event_payload(17, 99, size);
    EXPECT_EQ(p.size(), size);
    EXPECT_EQ(p.find_first_of("\r\n"), std::string::npos);  // one SSE data line
    std::size_t stream = 0, index = 0;
    ASSERT_TRUE(parse_sse_event_tag(p, stream, index));
    EXPECT_EQ(stream, 17u);
    EXPECT_EQ(index, 99u);
  }
}

TEST(sse_workload, foreign_payloads_are_not_taken_for_events) {
  std::size_t stream = 0, index = 0;
  EXPECT_FALSE(parse_sse_event_tag("", stream, index));
  EXPECT_FALSE(parse_sse_event_tag("hello", stream, index));
  EXPECT_FALSE(parse_sse_event_tag("#1:2", stream, index));   // no terminator
  EXPECT_FALSE(parse_sse_event_tag("#1;2;", stream, index));  // wrong separator
  EXPECT_FALSE(parse_sse_event_tag("#x:2;", stream, index));
  EXPECT_TRUE(parse_sse_event_tag("#0:0;....", stream, index));
}

TEST(sse_workload, control_events_give_their_next_offset) {
  EXPECT_EQ(sse_control_next_offset(R"({"streamNextOffset":"0000_0042","upToDate":true})"), "0000_0042");
  EXPECT_EQ(sse_control_next_offset(R"({"streamCursor": "x", "streamNextOffset" : "7"})"), "7");
  EXPECT_EQ(sse_control_next_offset(R"({"upToDate":true})"), "");
  EXPECT_EQ(sse_control_next_offset(R"({"streamNextOffset":)"), "");
}

}  // namespace
}  // namespace weir::bench
