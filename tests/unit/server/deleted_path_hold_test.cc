// deleted-path-hold-ms through a whole node: the path of a deleted stream answers 409 until its hold
// ends, also after a restart (the hold travels in the logged delete command), and the default frees the
// path at once (what the conformance suite expects).
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

class deleted_path_hold_test : public test_support::durable_node_fixture {};

TEST_F(deleted_path_hold_test, a_held_path_refuses_recreation_across_a_restart) {
  cfg_.deleted_path_hold_ms = 3'600'000;
  ASSERT_TRUE(start().has_value());
  const std::string a = path_on(0, "held"), b = path_on(1, "other");
  ASSERT_EQ(http(port_, "PUT", a, text, "old bytes").status, 201);
  ASSERT_EQ(http(port_, "DELETE", a).status, 204);
  auto again = http(port_, "PUT", a, text, "new bytes");
  EXPECT_EQ(again.status, 409);
  EXPECT_NE(again.body.find("deleted-path-hold-ms"), std::string::npos) << again.body;
  EXPECT_EQ(http(port_, "GET", a + "?offset=-1").status, 404);
  EXPECT_EQ(http(port_, "PUT", b, text, "x").status, 201);  // other paths are not affected

  stop();
  ASSERT_TRUE(start().has_value());
  EXPECT_EQ(http(port_, "PUT", a, text, "new bytes").status, 409) << "the hold did not survive a restart";
}

TEST_F(deleted_path_hold_test, by_default_a_deleted_path_can_be_recreated_at_once) {
  ASSERT_TRUE(start().has_value());
  const std::string a = path_on(0, "free");
  ASSERT_EQ(http(port_, "PUT", a, text, "old").status, 201);
  ASSERT_EQ(http(port_, "DELETE", a).status, 204);
  ASSERT_EQ(http(port_, "PUT", a, text, "new").status, 201);
  auto r = http(port_, "GET", a + "?offset=-1");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "new");
}

}  // namespace
}  // namespace weir::server
