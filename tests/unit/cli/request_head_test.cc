#include "cli/request_head.h"

#include <gtest/gtest.h>

namespace weir::cli {
namespace {

stream_target target() {
  return stream_target{client::endpoint{"http://127.0.0.1:4437", "127.0.0.1", 4437, "/v1/stream"},
                       "/v1/stream/x"};
}

TEST(request_head, a_put_with_headers_and_a_body) {
  request_spec spec{.method = "PUT", .with_body = true, .body_size = 5};
  spec.headers.emplace_back("Content-Type", "text/plain");
  spec.headers.emplace_back("Stream-TTL", "60");
  EXPECT_EQ(format_head(target(), spec),
            "PUT /v1/stream/x HTTP/1.1\r\nHost: 127.0.0.1:4437\r\nContent-Type: text/plain\r\nStream-TTL: "
            "60\r\nContent-Length: 5\r\n\r\n");
}

TEST(request_head, a_token_goes_in_the_authorization_header) {
  stream_target t = target();
  t.token = "wk_secret";
  EXPECT_EQ(format_head(t, {.method = "GET", .query = "offset=-1"}),
            "GET /v1/stream/x?offset=-1 HTTP/1.1\r\nHost: 127.0.0.1:4437\r\nAuthorization: Bearer "
            "wk_secret\r\n\r\n");
}

TEST(request_head, a_get_with_a_query_and_no_body) {
  EXPECT_EQ(format_head(target(), {.method = "GET", .query = "offset=-1&live=sse"}),
            "GET /v1/stream/x?offset=-1&live=sse HTTP/1.1\r\nHost: 127.0.0.1:4437\r\n\r\n");
}

TEST(request_head, an_empty_close_still_sends_its_length) {
  EXPECT_EQ(
      format_head(target(), {.method = "POST", .headers = {{"Stream-Closed", "true"}}, .with_body = true}),
      "POST /v1/stream/x HTTP/1.1\r\nHost: 127.0.0.1:4437\r\nStream-Closed: true\r\nContent-Length: "
      "0\r\n\r\n");
}

TEST(request_head, header_values_cannot_inject_lines) {
  EXPECT_TRUE(header_value_ok("text/plain; charset=utf-8"));
  EXPECT_TRUE(header_value_ok("a\tb"));
  EXPECT_FALSE(header_value_ok("text/plain\r\nX-Evil: 1"));
  EXPECT_FALSE(header_value_ok(std::string_view("a\0b", 3)));
}

}  // namespace
}  // namespace weir::cli
