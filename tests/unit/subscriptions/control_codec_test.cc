// Leader calls carry control requests and their answers between nodes (control_codec.h): round trips,
// and strict decoding of what another node sent.
#include "subscriptions/control_codec.h"

#include <gtest/gtest.h>

namespace weir::subscriptions {
namespace {

std::span<const std::byte> view(const std::vector<std::byte>& b) {
  return std::span<const std::byte>(b.data(), b.size());
}

TEST(control_codec, a_request_round_trips) {
  const std::string body("{\"a\":1}\0binary\xff", 16);
  control_request in{
      http::method::post,     body, "Bearer t.k", "/v1/stream/", "subscriptions/s%2F1/callback",
      "http://127.0.0.1:4437"};
  auto bytes = encode_control_request(in);
  auto out = decode_control_request(view(bytes));
  ASSERT_TRUE(out.has_value()) << out.err().reason;
  EXPECT_EQ(out->method, http::method::post);
  EXPECT_EQ(out->body, body);
  EXPECT_EQ(out->authorization, "Bearer t.k");
  EXPECT_EQ(out->root, "/v1/stream/");
  EXPECT_EQ(out->rest, "subscriptions/s%2F1/callback");
  EXPECT_EQ(out->origin, "http://127.0.0.1:4437");
  const control_request v = out->view();
  EXPECT_EQ(v.body.data(), out->body.data());  // views of the owned strings
  EXPECT_EQ(encode_control_request(v), bytes);
}

TEST(control_codec, a_malformed_request_is_refused) {
  auto bytes =
      encode_control_request(control_request{http::method::get, "", "", "/r/", "subscriptions/s", "o"});
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(decode_control_request(view(bytes).first(n)).has_value()) << n;
  }
  auto longer = bytes;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode_control_request(view(longer)).has_value());
  auto bad_method = bytes;
  bad_method[0] = std::byte{static_cast<std::uint8_t>(http::method::other) + 1};
  EXPECT_FALSE(decode_control_request(view(bad_method)).has_value());
  auto huge = bytes;
  huge[1] = huge[2] = huge[3] = huge[4] = std::byte{0xff};  // a length far past the end
  EXPECT_FALSE(decode_control_request(view(huge)).has_value());
}

TEST(control_codec, a_response_round_trips) {
  control_response in;
  in.status = 405;
  in.body = R"({"error":{"code":"METHOD_NOT_ALLOWED"}})";
  in.headers = {{"Allow", "POST"}, {"Retry-After", "1"}};
  auto bytes = encode_control_response(in);
  auto out = decode_control_response(view(bytes));
  ASSERT_TRUE(out.has_value()) << out.err().reason;
  EXPECT_EQ(out->status, 405);
  EXPECT_EQ(out->content_type, "application/json");
  EXPECT_EQ(out->headers, in.headers);
  EXPECT_EQ(out->body, in.body);
  control_response empty;
  empty.status = 204;
  empty.content_type.clear();
  auto e = decode_control_response(view(encode_control_response(empty)));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, 204);
  EXPECT_TRUE(e->content_type.empty());
  EXPECT_TRUE(e->body.empty());
}

TEST(control_codec, a_malformed_response_is_refused) {
  control_response in;
  in.headers = {{"Allow", "GET"}};
  in.body = "{}";
  auto bytes = encode_control_response(in);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(decode_control_response(view(bytes).first(n)).has_value()) << n;
  }
  auto longer = bytes;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode_control_response(view(longer)).has_value());
  auto bad_status = bytes;
  bad_status[0] = std::byte{42};
  bad_status[1] = std::byte{0};
  EXPECT_FALSE(decode_control_response(view(bad_status)).has_value());
}

}  // namespace
}  // namespace weir::subscriptions
