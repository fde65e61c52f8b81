#include "cli/stream_target.h"

#include <gtest/gtest.h>

namespace weir::cli {
namespace {

TEST(stream_target, a_name_goes_under_the_server_prefix_encoded) {
  auto t = resolve_target("http://127.0.0.1:4437", "orders/2024 q1");
  ASSERT_TRUE(t.has_value()) << t.err().reason;
  EXPECT_EQ(t->server.host, "127.0.0.1");
  EXPECT_EQ(t->server.port, 4437);
  EXPECT_EQ(t->path, "/v1/stream/orders/2024%20q1");
  auto custom = resolve_target("http://localhost:9000/streams/", "a");
  ASSERT_TRUE(custom.has_value());
  EXPECT_EQ(custom->path, "/streams/a");
}

TEST(stream_target, a_path_is_used_as_given) {
  auto t = resolve_target("http://127.0.0.1:4437/ignored", "/v1/stream/x");
  ASSERT_TRUE(t.has_value()) << t.err().reason;
  EXPECT_EQ(t->path, "/v1/stream/x");
  EXPECT_FALSE(resolve_target("http://127.0.0.1:4437", "/v1/stream/a b").has_value());
  EXPECT_FALSE(resolve_target("http://127.0.0.1:4437", "/v1/stream/x?offset=1").has_value());
}

TEST(stream_target, a_url_names_server_and_path) {
  auto t = resolve_target("http://127.0.0.1:4437", "http://127.0.0.1:5000/v1/stream/y");
  ASSERT_TRUE(t.has_value()) << t.err().reason;
  EXPECT_EQ(t->server.port, 5000);
  EXPECT_EQ(t->path, "/v1/stream/y");
  EXPECT_FALSE(resolve_target("http://127.0.0.1:4437", "http://127.0.0.1:5000").has_value());
  EXPECT_FALSE(resolve_target("http://127.0.0.1:4437", "https://127.0.0.1:5000/v1/stream/y").has_value());
}

TEST(stream_target, bad_server_or_empty_name) {
  EXPECT_FALSE(resolve_target("ftp://x", "a").has_value());
  EXPECT_FALSE(resolve_target("http://example.com", "a").has_value());
  EXPECT_FALSE(resolve_target("http://127.0.0.1:4437", "").has_value());
}

TEST(stream_target, percent_encoding_keeps_unreserved_bytes) {
  EXPECT_EQ(percent_encode("aZ09-._~", false), "aZ09-._~");
  EXPECT_EQ(percent_encode("a/b&c=d", false), "a%2Fb%26c%3Dd");
  EXPECT_EQ(percent_encode("a/b", true), "a/b");
  EXPECT_EQ(percent_encode("\xff", false), "%FF");
}

}  // namespace
}  // namespace weir::cli
