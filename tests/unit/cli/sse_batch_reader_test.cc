#include "cli/sse_batch_reader.h"

#include <gtest/gtest.h>

namespace weir::cli {
namespace {

std::vector<sse_batch> feed_in_pieces(sse_batch_reader& r, std::string_view body, std::size_t piece) {
  std::vector<sse_batch> out;
  for (std::size_t i = 0; i < body.size(); i += piece) {
    auto s = r.feed(body.substr(i, piece), [&](sse_batch& b) { out.push_back(b); });
    EXPECT_TRUE(s.has_value()) << s.err().reason;
  }
  return out;
}

constexpr std::string_view two_batches =
    "event: data\ndata:a\ndata:b\ndata:\n\n"
    "event: control\ndata:{\"streamNextOffset\":\"0_4\",\"streamCursor\":\"c1\",\"upToDate\":true}\n\n"
    ":\n\n"
    "event: data\ndata:c\n\n"
    "event: control\ndata:{\"streamNextOffset\":\"0_5\",\"upToDate\":true,\"streamClosed\":true}\n\n";

TEST(sse_batch_reader, a_batch_is_the_data_up_to_its_control_event) {
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, two_batches.size()}) {
    sse_batch_reader r(false);
    auto batches = feed_in_pieces(r, two_batches, piece);
    ASSERT_EQ(batches.size(), 2u) << piece;
    EXPECT_EQ(batches[0].events, std::vector<std::string>{"a\nb\n"});
    EXPECT_EQ(batches[0].next_offset, "0_4");
    EXPECT_TRUE(batches[0].up_to_date);
    EXPECT_FALSE(batches[0].closed);
    EXPECT_EQ(batches[1].events, std::vector<std::string>{"c"});
    EXPECT_EQ(batches[1].next_offset, "0_5");
    EXPECT_TRUE(batches[1].closed);
    EXPECT_FALSE(r.has_unconfirmed());
  }
}

TEST(sse_batch_reader, data_without_its_control_event_is_not_handed_out) {
  // The connection breaks between the two events: printing "x" now would print it twice after the
  // reconnection from the previous offset.
  sse_batch_reader r(false);
  auto batches = feed_in_pieces(r, "event: data\ndata:x\n\nevent: control\ndata:{\"streamNext", 4);
  EXPECT_TRUE(batches.empty());
  EXPECT_TRUE(r.has_unconfirmed());
}

TEST(sse_batch_reader, a_control_event_alone_moves_the_offset) {
  sse_batch_reader r(false);
  auto batches =
      feed_in_pieces(r, "event: control\ndata:{\"streamNextOffset\":\"0_9\",\"upToDate\":true}\n\n", 100);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_TRUE(batches[0].events.empty());
  EXPECT_EQ(batches[0].next_offset, "0_9");
}

TEST(sse_batch_reader, decodes_base64_data_split_over_lines) {
  sse_batch_reader r(true);
  auto batches = feed_in_pieces(
      r, "event: data\ndata:AQID\ndata:BA0K\n\nevent: control\ndata:{\"streamNextOffset\":\"0_6\"}\n\n", 3);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].events, std::vector<std::string>{std::string("\x01\x02\x03\x04\r\n")});
  EXPECT_FALSE(batches[0].up_to_date);
}

TEST(sse_batch_reader, malformed_events_fail_the_reader) {
  {
    sse_batch_reader r(true);
    EXPECT_FALSE(r.feed("event: data\ndata:!!!!\n\n", [](sse_batch&) {}).has_value());
    EXPECT_FALSE(
        r.feed("event: control\ndata:{\"streamNextOffset\":\"1\"}\n\n", [](sse_batch&) {}).has_value());
  }
  {
    sse_batch_reader r(false);
    EXPECT_FALSE(r.feed("event: control\ndata:{\"upToDate\":true}\n\n", [](sse_batch&) {}).has_value());
  }
  {
    sse_batch_reader r(false);
    EXPECT_FALSE(r.feed("event: control\ndata:not json\n\n", [](sse_batch&) {}).has_value());
  }
}

}  // namespace
}  // namespace weir::cli
