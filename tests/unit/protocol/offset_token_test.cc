#include "protocol/offset_token.h"

#include <gtest/gtest.h>

#include <limits>

namespace weir::protocol {
namespace {

TEST(offset_token, fixed_width_and_sortable) {
  EXPECT_EQ(format_offset(streams::stream_offset(0)), "0000000000000000_0000000000000000");
  EXPECT_EQ(format_offset(streams::stream_offset(42)), "0000000000000000_0000000000000042");
  std::string a = format_offset(streams::stream_offset(9)), b = format_offset(streams::stream_offset(10));
  EXPECT_EQ(a.size(), b.size());
  EXPECT_LT(a, b);  // PROTOCOL.md 8: lexicographic order is stream order
  EXPECT_NE(a, "-1");
  EXPECT_NE(a, "now");
  EXPECT_EQ(a.find_first_of(",&=?/"), std::string::npos);
}

TEST(offset_token, digits_at_every_width) {
  EXPECT_EQ(offset_chars(streams::stream_offset(9'999'999'999'999'999)).view(),
            "0000000000000000_9999999999999999");
  EXPECT_EQ(offset_chars(streams::stream_offset(10'000'000'000'000'000)).view(),
            "0000000000000000_10000000000000000");
  EXPECT_EQ(offset_chars(streams::stream_offset(std::numeric_limits<std::uint64_t>::max())).view(),
            "0000000000000000_18446744073709551615");
  std::uint64_t v = 1;
  for (int digits = 1; digits <= 16; ++digits, v *= 10) {
    std::string expect =
        "0000000000000000_" + std::string(16 - digits, '0') + "1" + std::string(digits - 1, '0');
    EXPECT_EQ(format_offset(streams::stream_offset(v)), expect);
  }
}

TEST(offset_token, round_trip_and_rejects_malformed) {
  auto o = parse_offset_token(format_offset(streams::stream_offset(123456)));
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->value(), 123456u);
  EXPECT_GT(parse_offset_token("9999999999999999_9999999999999999")->value(), 1'000'000'000'000'000u);
  for (const char* bad :
       {"", "0", "0,1", "0 1", "-2", "0000000000000000-0000000000000000", "000000000000000_00000000000000000",
        "0000000000000000_000000000000000x", "../0000000000000_0000000000000000"}) {
    EXPECT_FALSE(parse_offset_token(bad).has_value()) << bad;
  }
}

TEST(offset_param, sentinels) {
  EXPECT_EQ(parse_offset_param("-1")->k, offset_param::kind::start);
  EXPECT_EQ(parse_offset_param("now")->k, offset_param::kind::now);
  EXPECT_EQ(parse_offset_param("0000000000000000_0000000000000007")->at.value(), 7u);
  EXPECT_FALSE(parse_offset_param("NOW").has_value());
  EXPECT_FALSE(parse_offset_param("-2").has_value());
}

}  // namespace
}  // namespace weir::protocol
