#include "protocol/json_mode.h"

#include <gtest/gtest.h>

namespace weir::protocol {
namespace {

std::string stored(const streams::payload& p) {
  return p.bytes ? *p.bytes : std::string();
}

TEST(json_payload, flattens_one_level) {
  auto one = json_payload(R"({"event": "created"})");
  EXPECT_EQ(stored(one), R"({"event":"created"},)");
  EXPECT_EQ(one.messages, 1u);
  auto two = json_payload(R"([{"a":1}, {"b":2}])");
  EXPECT_EQ(stored(two), R"({"a":1},{"b":2},)");
  EXPECT_EQ(two.messages, 2u);
  auto nested = json_payload("[[1,2], [3,4]]");
  EXPECT_EQ(stored(nested), "[1,2],[3,4],");
  EXPECT_EQ(nested.messages, 2u);
  auto deep = json_payload("[[[1,2,3]]]");
  EXPECT_EQ(stored(deep), "[[1,2,3]],");
  EXPECT_EQ(deep.messages, 1u);
  auto scalar = json_payload("  42 ");
  EXPECT_EQ(stored(scalar), "42,");
}

TEST(json_payload, empty_array_and_invalid) {
  EXPECT_TRUE(json_payload("[]").json_empty_array);
  EXPECT_TRUE(json_payload(" [ ] ").json_empty_array);
  for (const char* bad : {"{", "[1,]", "not json", "{\"a\":}", "", "[1] [2]"}) {
    EXPECT_TRUE(json_payload(bad).json_invalid) << bad;
  }
}

TEST(make_payload, only_json_content_types_are_processed) {
  EXPECT_EQ(stored(make_payload("[1]", "application/json; charset=utf-8")), "1,");
  EXPECT_EQ(stored(make_payload("[1]", "text/plain")), "[1]");
  EXPECT_TRUE(make_payload("", "application/json").empty());
}

TEST(json_array, wraps_stored_records) {
  auto a = streams::make_chunk("1,2,");
  auto b = streams::make_chunk("{\"x\":\"a,b\"},");
  std::vector<streams::chunk_slice> slices = {{a, 0, 4}, {b, 0, static_cast<std::uint32_t>(b->size())}};
  EXPECT_EQ(json_array(slices), R"([1,2,{"x":"a,b"}])");
  EXPECT_EQ(json_array({}), "[]");
}

TEST(json_prefix, first_messages_of_a_record) {
  auto p = json_prefix(R"({"a":1},{"b":"x,y"},{"c":3},)", 2);
  EXPECT_EQ(stored(p), R"({"a":1},{"b":"x,y"},)");
  EXPECT_EQ(p.messages, 2u);
  EXPECT_TRUE(json_prefix("1,", 0).empty());
}

}  // namespace
}  // namespace weir::protocol
