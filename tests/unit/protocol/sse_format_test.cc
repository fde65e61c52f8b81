#include "protocol/sse_format.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace weir::protocol
