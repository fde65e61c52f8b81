#include "server/owned_request.h"

#include <gtest/gtest.h>

#include <memory>

#include "server/node.h"

namespace weir::server {
namespace {

TEST(owned_request, survives_the_original_buffer) {
  auto buffer = std::make_unique<std::string>("PUT/v1/stream/a?x=1content-typetext/plainbody");
  std::string_view b(*buffer);
  http::request_head head;
  head.method = http::method::put;
  head.method_name = b.substr(0, 3);
  head.target = b.substr(3, 16);
  head.path = b.substr(3, 12);
  head.query = b.substr(16, 3);
  head.headers[0] = {b.substr(19, 12), b.substr(31, 10)};
  head.header_count = 1;
  http::request req{&head, b.substr(41)};
  owned_request copy(req);
  buffer->assign(buffer->size(), 'X');  // the engine reuses its buffer
  const http::request& r = copy.get();
  EXPECT_EQ(r.method(), http::method::put);
  EXPECT_EQ(r.target(), "/v1/stream/a?x=1");
  EXPECT_EQ(r.path(), "/v1/stream/a");
  EXPECT_EQ(r.query(), "x=1");
  ASSERT_NE(r.find("Content-Type"), nullptr);
  EXPECT_EQ(r.find("content-type")->value, "text/plain");
  EXPECT_EQ(r.body, "body");
}

TEST(owner_index, stable_and_in_range) {
  EXPECT_EQ(owner_index("/v1/stream/a", 1), 0u);
  unsigned seen[4] = {};
  for (int i = 0; i < 400; ++i) {
    std::string p = "/v1/stream/s" + std::to_string(i);
    unsigned o = owner_index(p, 4);
    ASSERT_LT(o, 4u);
    EXPECT_EQ(o, owner_index(p, 4));
    seen[o]++;
  }
  for (unsigned n : seen) EXPECT_GT(n, 50u);  // spreads streams over cores
}

}  // namespace
}  // namespace weir::server
