#include "client/endpoint.h"

#include <gtest/gtest.h>

namespace weir::client {
namespace {

TEST(endpoint, splits_host_port_and_prefix) {
  auto e = parse_endpoint("http://127.0.0.1:4437");
  ASSERT_TRUE(e.has_value()) << e.err().reason;
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, 4437);
  EXPECT_EQ(e->prefix, "/v1/stream");  // the default when the URL has no path
  auto p = parse_endpoint("http://localhost/a/b//");
  ASSERT_TRUE(p.has_value()) << p.err().reason;
  EXPECT_EQ(p->host, "127.0.0.1");
  EXPECT_EQ(p->port, 80);
  EXPECT_EQ(p->prefix, "/a/b");
  EXPECT_EQ(p->url, "http://localhost/a/b//");
}

TEST(endpoint, rejects_what_the_client_cannot_reach) {
  EXPECT_FALSE(parse_endpoint("https://127.0.0.1").has_value());
  EXPECT_FALSE(parse_endpoint("127.0.0.1:4437").has_value());
  EXPECT_FALSE(parse_endpoint("http://example.com").has_value());
  EXPECT_FALSE(parse_endpoint("http://:4437").has_value());
  EXPECT_FALSE(parse_endpoint("http://127.0.0.1:0").has_value());
  EXPECT_FALSE(parse_endpoint("http://127.0.0.1:65536").has_value());
  EXPECT_FALSE(parse_endpoint("http://127.0.0.1:x").has_value());
  EXPECT_FALSE(parse_endpoint("http://127.0.0.1/a#b").has_value());
}

}  // namespace
}  // namespace weir::client
