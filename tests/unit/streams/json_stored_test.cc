// streams::whole_messages_prefix: where the last whole message of a JSON stream's stored form ends, with
// commas, brackets and quotes inside strings, nested values and escapes; every cut of a stored form ends
// at a message boundary at or before the cut.
#include "streams/json_stored.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weir::streams {
namespace {

TEST(json_stored, the_prefix_ends_after_the_last_whole_message) {
  EXPECT_EQ(whole_messages_prefix(""), 0u);
  EXPECT_EQ(whole_messages_prefix("1,"), 2u);
  EXPECT_EQ(whole_messages_prefix("1,2"), 2u);  // "2" has no comma yet: it may go on ("23")
  EXPECT_EQ(whole_messages_prefix("{\"a\":1,\"b\":[1,2]},{\"c\""), 18u);
  EXPECT_EQ(whole_messages_prefix("\"x,y\",\"z"), 6u);
  EXPECT_EQ(whole_messages_prefix("\"a\\\",b\",3,"), 10u);         // an escaped quote does not end the string
  EXPECT_EQ(whole_messages_prefix("\"a\\\\\",b"), 6u);             // an escaped backslash does
  EXPECT_EQ(whole_messages_prefix("[[\"]\",{}]],\"[\",[1"), 15u);  // brackets in strings do not nest
}

TEST(json_stored, every_cut_of_a_stored_form_ends_at_a_message_boundary) {
  const std::vector<std::string> messages = {"{\"t\":\"hi, there\",\"n\":[1,2,{\"x\":\"]\"}]}",
                                             "42",
                                             "\"a \\\"quoted\\\" , comma\"",
                                             "[]",
                                             "{}",
                                             "true",
                                             "[{\"k\":\"v\\\\\"},null]",
                                             "-1.5e3"};
  std::string stored;
  std::vector<std::size_t> ends{0};
  for (const auto& m : messages) {
    stored += m + ",";
    ends.push_back(stored.size());
  }
  for (std::size_t cut = 0; cut <= stored.size(); ++cut) {
    std::size_t want = 0;
    for (std::size_t e : ends)
      if (e <= cut) want = e;
    EXPECT_EQ(whole_messages_prefix(std::string_view(stored).substr(0, cut)), want) << "cut at " << cut;
  }
}

}  // namespace
}  // namespace weir::streams
