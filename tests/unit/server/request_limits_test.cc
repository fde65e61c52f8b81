// What a client can make the server keep is bounded (docs/limits.md), checked through a whole node: a
// stream quota, and caps on Producer-Id and Content-Type; each limit answers a 4xx that names it.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "unit/server/durable_node_fixture.h"
#include "unit/server/http_test_client.h"

namespace weir::server {
namespace {

using test_support::http;
using test_support::path_on;

const std::map<std::string, std::string> text = {{"Content-Type", "text/plain"}};

class request_limits_test : public test_support::durable_node_fixture {};

TEST_F(request_limits_test, the_stream_quota_counts_every_core_and_frees_on_delete) {
  cfg_.max_streams = 3;
  ASSERT_TRUE(start().has_value());
  const std::string a = path_on(0, "a"), b = path_on(1, "b"), c = path_on(0, "c"), d = path_on(1, "d");
  ASSERT_EQ(http(port_, "PUT", a, text).status, 201);
  ASSERT_EQ(http(port_, "PUT", b, text).status, 201);
  ASSERT_EQ(http(port_, "PUT", c, text).status, 201);
  auto over = http(port_, "PUT", d, text);
  EXPECT_EQ(over.status, 403);
  EXPECT_NE(over.body.find("max-streams"), std::string::npos) << over.body;
  EXPECT_EQ(http(port_, "PUT", a, text).status, 200) << "an idempotent PUT of an existing stream";
  ASSERT_EQ(http(port_, "DELETE", b).status, 204);
  EXPECT_EQ(http(port_, "PUT", d, text).status, 201);

  stop();  // the count comes back from the log
  ASSERT_TRUE(start().has_value());
  EXPECT_EQ(http(port_, "PUT", b, text).status, 403);
}

TEST_F(request_limits_test, long_producer_ids_and_content_types_are_refused_by_name) {
  ASSERT_TRUE(start().has_value());
  const std::string a = path_on(0, "a");
  auto ct = http(port_, "PUT", a, {{"Content-Type", "text/plain; x=" + std::string(300, 'y')}});
  EXPECT_EQ(ct.status, 400);
  EXPECT_NE(ct.body.find("Content-Type too long"), std::string::npos) << ct.body;
  ASSERT_EQ(http(port_, "PUT", a, text).status, 201);
  std::map<std::string, std::string> producer = {{"Content-Type", "text/plain"},
                                                 {"Producer-Id", std::string(257, 'p')},
                                                 {"Producer-Epoch", "0"},
                                                 {"Producer-Seq", "0"}};
  auto long_id = http(port_, "POST", a, producer, "x");
  EXPECT_EQ(long_id.status, 400);
  EXPECT_NE(long_id.body.find("Producer-Id too long"), std::string::npos) << long_id.body;
  producer["Producer-Id"] = std::string(256, 'p');
  EXPECT_EQ(http(port_, "POST", a, producer, "x").status, 200);
}

}  // namespace
}  // namespace weir::server
