#include "client/sse_event_parser.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace weir::client {
namespace {

struct seen {
  std::string type, data, id;
  bool operator==(const seen&) const = default;
};

std::vector<seen> parse_in_pieces(std::string_view body, std::size_t piece) {
  sse_event_parser p;
  std::vector<seen> out;
  for (std::size_t i = 0; i < body.size(); i += piece) {
    EXPECT_TRUE(p.feed(body.substr(i, piece), [&](const sse_event& e) {
      out.push_back({std::string(e.type), std::string(e.data), std::string(e.id)});
    }));
  }
  return out;
}

const char* const durable_streams_body =
    "event: data\n"
    "data: hello\n"
    "\n"
    "event: control\n"
    "data: {\"streamNextOffset\":\"0000_5\",\"streamCursor\":\"7\",\"upToDate\":true}\n"
    "\n";

TEST(sse_event_parser, parses_a_durable_streams_data_and_control_pair) {
  auto events = parse_in_pieces(durable_streams_body, 1 << 20);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], (seen{"data", "hello", ""}));
  EXPECT_EQ(events[1].type, "control");
  EXPECT_EQ(events[1].data, "{\"streamNextOffset\":\"0000_5\",\"streamCursor\":\"7\",\"upToDate\":true}");
}

TEST(sse_event_parser, gives_the_same_events_for_every_split) {
  const auto whole = parse_in_pieces(durable_streams_body, 1 << 20);
  for (std::size_t piece = 1; piece < 40; ++piece) {
    EXPECT_EQ(parse_in_pieces(durable_streams_body, piece), whole) << "piece size " << piece;
  }
}

TEST(sse_event_parser, joins_multiple_data_lines_with_newlines) {
  auto events = parse_in_pieces("event: data\ndata: [\ndata: {\"k\":\"v\"},\ndata: ]\n\n", 3);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "[\n{\"k\":\"v\"},\n]");
}

TEST(sse_event_parser, accepts_crlf_and_bare_cr_line_ends_even_when_split) {
  const std::string crlf = "event: data\r\ndata: a\r\n\r\nevent: data\rdata: b\r\rdata: c\n\n";
  for (std::size_t piece = 1; piece <= crlf.size(); ++piece) {
    auto events = parse_in_pieces(crlf, piece);
    ASSERT_EQ(events.size(), 3u) << "piece " << piece;
    EXPECT_EQ(events[0], (seen{"data", "a", ""}));
    EXPECT_EQ(events[1], (seen{"data", "b", ""}));
    EXPECT_EQ(events[2], (seen{"message", "c", ""}));  // the blank line reset the type
  }
}

TEST(sse_event_parser, skips_comments_and_unknown_fields_and_keeps_the_id) {
  auto events = parse_in_pieces(": keep-alive\nretry: 10\nid: 42\nfoo: bar\ndata:x\n\ndata: y\n\n", 5);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], (seen{"message", "x", "42"}));  // no space after the colon is fine
  EXPECT_EQ(events[1], (seen{"message", "y", "42"}));  // the last event id persists
}

TEST(sse_event_parser, strips_only_one_leading_space_and_keeps_empty_data) {
  auto events = parse_in_pieces("data:  two\n\ndata\n\n", 4);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].data, " two");
  EXPECT_EQ(events[1].data, "");
}

TEST(sse_event_parser, does_not_dispatch_an_event_without_data_or_an_unterminated_one) {
  sse_event_parser p;
  int n = 0;
  auto count = [&](const sse_event&) { ++n; };
  EXPECT_TRUE(p.feed("event: control\n\n", count));
  EXPECT_EQ(n, 0);
  EXPECT_TRUE(p.feed("event: data\ndata: half", count));
  EXPECT_EQ(n, 0);
  EXPECT_TRUE(p.mid_event());
  EXPECT_TRUE(p.feed("\n\n", count));
  EXPECT_EQ(n, 1);
  EXPECT_FALSE(p.mid_event());
  EXPECT_EQ(p.events(), 1u);
}

TEST(sse_event_parser, fails_when_an_event_exceeds_the_limit) {
  sse_event_parser p(16);
  auto ignore = [](const sse_event&) {};
  EXPECT_TRUE(p.feed("data: 0123456789\n", ignore));
  EXPECT_FALSE(p.feed("data: 0123456789\n\n", ignore));
  EXPECT_TRUE(p.failed());
  EXPECT_FALSE(p.feed("data: x\n\n", ignore));
}

}  // namespace
}  // namespace weir::client
