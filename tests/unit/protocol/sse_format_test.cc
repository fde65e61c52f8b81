#include "protocol/sse_format.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace weir::protocol {
namespace {

TEST(sse_format, data_event_splits_every_line_break) {
  std::string out;
  append_data_event(out, "a\nb\r\nc\rd");
  EXPECT_EQ(out, "event: data\ndata:a\ndata:b\ndata:c\ndata:d\n\n");
  out.clear();
  // An embedded blank line or field cannot end the event or inject one (CRLF injection).
  append_data_event(out, "x\n\nevent: control\ndata: {}");
  EXPECT_EQ(out, "event: data\ndata:x\ndata:\ndata:event: control\ndata:data: {}\n\n");
  out.clear();
  append_data_event(out, "");
  EXPECT_EQ(out, "event: data\ndata:\n\n");
}

TEST(sse_format, control_event_fields) {
  std::string out;
  append_control_event(out, {"0000000000000000_0000000000000005", std::string("123"), true, false});
  EXPECT_EQ(
      out,
      "event: "
      "control\ndata:{\"streamNextOffset\":\"0000000000000000_0000000000000005\",\"streamCursor\":\"123\","
      "\"upToDate\":true}\n\n");
  out.clear();
  append_control_event(out, {"0000000000000000_0000000000000005", std::nullopt, false, true});
  EXPECT_EQ(
      out,
      "event: control\ndata:{\"streamNextOffset\":\"0000000000000000_0000000000000005\",\"upToDate\":true,"
      "\"streamClosed\":true}\n\n");
}

// WHATWG HTML 9.2.6: "id" sets the last event ID an EventSource sends back on reconnection, "retry" its
// reconnection time; an event with no data is dispatched to nobody.
TEST(sse_format, event_id_and_retry_fields) {
  std::string out;
  append_retry(out, 1000);
  EXPECT_EQ(out, "retry:1000\n\n");
  out.clear();
  append_event_id(out, "0000000000000000_0000000000000005");
  append_data_event(out, "x");
  EXPECT_EQ(out, "id:0000000000000000_0000000000000005\nevent: data\ndata:x\n\n");
}

TEST(sse_format, base64_rfc4648_vectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode(std::string("\x00\xff\xfe", 3)), "AP/+");
}

TEST(sse_format, base64_for_binary_content_types) {
  EXPECT_FALSE(sse_needs_base64("text/plain"));
  EXPECT_FALSE(sse_needs_base64("Text/HTML; charset=utf-8"));
  EXPECT_FALSE(sse_needs_base64("application/json"));
  EXPECT_TRUE(sse_needs_base64("application/octet-stream"));
  EXPECT_TRUE(sse_needs_base64("application/x-protobuf"));
  EXPECT_TRUE(sse_needs_base64("image/png"));
  EXPECT_TRUE(sse_needs_base64("application/ndjson"));
}

// One event written in pieces cut anywhere (a CRLF cut in two, a base64 group cut in two) reads exactly
// like the event written at once.
TEST(sse_format, data_writer_in_pieces_matches_the_whole_event) {
  std::mt19937 rng(7);
  std::string payload;
  const std::string alphabet = "ab{}\"\r\n,";
  for (int i = 0; i < 5000; ++i) payload += alphabet[rng() % alphabet.size()];
  payload += "\r\n\r\r\n\n";
  for (bool base64 : {false, true}) {
    std::string whole;
    append_data_event(whole, base64 ? base64_encode(payload) : payload);
    for (int round = 0; round < 200; ++round) {
      std::string out;
      sse_data_writer w(base64);
      w.begin(out);
      std::size_t at = 0;
      while (at < payload.size()) {
        std::size_t n = std::min<std::size_t>(payload.size() - at, rng() % 7);
        w.add(out, std::string_view(payload).substr(at, n));
        at += n;
      }
      w.finish(out);
      ASSERT_EQ(out, whole) << "base64 " << base64 << " round " << round;
    }
  }
  // Every CR/LF position as the cut.
  for (std::string p :
       {std::string("a\r\nb"), std::string("a\r\rb"), std::string("a\n\rb"), std::string("\r")}) {
    std::string whole;
    append_data_event(whole, p);
    for (std::size_t cut = 0; cut <= p.size(); ++cut) {
      std::string out;
      sse_data_writer w(false);
      w.begin(out);
      w.add(out, std::string_view(p).substr(0, cut));
      w.add(out, std::string_view(p).substr(cut));
      w.finish(out);
      EXPECT_EQ(out, whole) << cut;
    }
  }
}

// A reader strips one space after "data:" (WHATWG HTML, "Interpreting an event stream"): a line that
// begins with a space gets one more, in both writers, so it arrives whole; other lines stay "data:x".
TEST(sse_format, leading_spaces_of_a_line_survive_a_reader) {
  std::string out;
  append_data_event(out, "  two spaces\n one\nnone");
  EXPECT_EQ(out, "event: data\ndata:   two spaces\ndata:  one\ndata:none\n\n");
  std::string pieces;
  sse_data_writer w(false);
  w.begin(pieces);
  for (std::string_view piece : {"  two", " spaces\n", " one\nnone"}) w.add(pieces, piece);
  w.finish(pieces);
  EXPECT_EQ(pieces, out);
}

}  // namespace
}  // namespace weir::protocol
