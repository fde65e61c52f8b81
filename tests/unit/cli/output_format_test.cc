#include "cli/output_format.h"

#include <gtest/gtest.h>

namespace weir::cli {
namespace {

TEST(output_format, head_as_text_and_json) {
  stream_info info{"/v1/stream/x", "0_5", "text/plain", true, std::string("60"), std::nullopt};
  EXPECT_EQ(format_head(info, false), "offset: 0_5\ncontent_type: text/plain\nclosed: true\nttl: 60\n");
  EXPECT_EQ(format_head(info, true),
            "{\"path\":\"/v1/stream/x\",\"offset\":\"0_5\",\"content_type\":\"text/plain\",\"closed\":true,"
            "\"ttl\":60,\"expires_at\":null}\n");
  info.ttl.reset();
  info.expires_at = "2030-01-01T00:00:00Z";
  info.closed = false;
  EXPECT_EQ(format_head(info, true),
            "{\"path\":\"/v1/stream/x\",\"offset\":\"0_5\",\"content_type\":\"text/plain\",\"closed\":false,"
            "\"ttl\":null,\"expires_at\":\"2030-01-01T00:00:00Z\"}\n");
}

TEST(output_format, writes_print_the_offset_or_an_object) {
  EXPECT_EQ(format_created("/s", true, "0_0", false, false), "0_0\n");
  EXPECT_EQ(format_created("/s", false, "0_0", true, true),
            "{\"path\":\"/s\",\"created\":false,\"offset\":\"0_0\",\"closed\":true}\n");
  EXPECT_EQ(format_appended("/s", "0_9", 3, false, false), "0_9\n");
  EXPECT_EQ(format_appended("/s", "0_9", 3, false, true),
            "{\"path\":\"/s\",\"offset\":\"0_9\",\"appends\":3,\"closed\":false}\n");
  EXPECT_EQ(format_closed("/s", "0_9", true), "{\"path\":\"/s\",\"offset\":\"0_9\",\"closed\":true}\n");
  EXPECT_EQ(format_deleted("/s", false), "");
  EXPECT_EQ(format_deleted("/s", true), "{\"path\":\"/s\",\"deleted\":true}\n");
}

TEST(output_format, read_batches_by_content_kind) {
  read_batch text{.kind = content_kind::text, .data = "a\"b\n", .next_offset = "0_4", .up_to_date = true};
  EXPECT_EQ(format_read_batch(text, false), "a\"b\n");
  EXPECT_EQ(format_read_batch(text, true),
            "{\"offset\":\"0_4\",\"up_to_date\":true,\"closed\":false,\"data\":\"a\\\"b\\n\"}\n");
  read_batch bin{.kind = content_kind::binary, .data = std::string("\0\xff", 2), .next_offset = "0_2"};
  EXPECT_EQ(format_read_batch(bin, false), std::string("\0\xff", 2));
  EXPECT_EQ(format_read_batch(bin, true),
            "{\"offset\":\"0_2\",\"up_to_date\":false,\"closed\":false,\"data_base64\":\"AP8=\"}\n");
  read_batch json{
      .kind = content_kind::json, .messages = {"{\"a\":1}", "2"}, .next_offset = "0_2", .closed = true};
  EXPECT_EQ(format_read_batch(json, false), "{\"a\":1}\n2\n");
  EXPECT_EQ(format_read_batch(json, true),
            "{\"offset\":\"0_2\",\"up_to_date\":false,\"closed\":true,\"messages\":[{\"a\":1},2]}\n");
}

TEST(output_format, errors_name_the_command_path_and_status) {
  EXPECT_EQ(format_error_text("head", "/v1/stream/x", 404, "stream not found\n"),
            "weir stream head /v1/stream/x: HTTP 404 Not Found: stream not found\n");
  EXPECT_EQ(format_error_text("head", "/v1/stream/x", 404, ""),
            "weir stream head /v1/stream/x: HTTP 404 Not Found\n");
  EXPECT_EQ(format_error_text("read", "/s", 0, "connect: Connection refused"),
            "weir stream read /s: connect: Connection refused\n");
  EXPECT_EQ(format_error_json(exit_code::conflict, "/s", 409, "closed"),
            "{\"error\":\"conflict\",\"path\":\"/s\",\"status\":409,\"message\":\"closed\"}\n");
}

}  // namespace
}  // namespace weir::cli
