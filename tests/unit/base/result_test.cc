#include "base/result.h"

#include <gtest/gtest.h>

#include "base/strong_id.h"

namespace weir {
namespace {

enum class test_errc { bad = 3 };

result<int> parse_positive(int v) {
  if (v <= 0) return make_error(test_errc::bad, "not positive");
  return v;
}

TEST(result, holds_value_or_error) {
  auto ok = parse_positive(5);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 5);
  auto bad = parse_positive(-1);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.err().as<test_errc>(), test_errc::bad);
  EXPECT_EQ(bad.err().reason, "not positive");
}

TEST(result, void_status) {
  status s;
  EXPECT_TRUE(s);
  status f = make_error(test_errc::bad, "x");
  EXPECT_FALSE(f);
  EXPECT_EQ(f.err().code, 3);
}

TEST(strong_id, compares_by_value) {
  core_id a{1}, b{2};
  EXPECT_LT(a, b);
  EXPECT_EQ(a, core_id{1});
}

}  // namespace
}  // namespace weir
