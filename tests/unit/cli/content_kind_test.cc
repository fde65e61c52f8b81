#include "cli/content_kind.h"

#include <gtest/gtest.h>

namespace weir::cli {
namespace {

TEST(content_kind, classifies_by_media_type) {
  EXPECT_EQ(classify_content_type("application/json"), content_kind::json);
  EXPECT_EQ(classify_content_type("Application/JSON; charset=utf-8"), content_kind::json);
  EXPECT_EQ(classify_content_type("text/plain"), content_kind::text);
  EXPECT_EQ(classify_content_type(" TEXT/csv "), content_kind::text);
  EXPECT_EQ(classify_content_type("application/octet-stream"), content_kind::binary);
  EXPECT_EQ(classify_content_type("application/ndjson"), content_kind::binary);  // base64 over SSE
  EXPECT_EQ(classify_content_type(""), content_kind::binary);
}

TEST(content_kind, json_array_messages_are_minified) {
  auto m = json_array_messages("[ {\"a\": 1} ,\n [1, 2], \"s\" ]");
  ASSERT_TRUE(m.has_value()) << m.err().reason;
  EXPECT_EQ(*m, (std::vector<std::string>{"{\"a\":1}", "[1,2]", "\"s\""}));
  auto empty = json_array_messages("[]");
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());
  EXPECT_FALSE(json_array_messages("{\"a\":1}").has_value());
  EXPECT_FALSE(json_array_messages("[1,").has_value());
}

}  // namespace
}  // namespace weir::cli
