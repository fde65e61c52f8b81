#include "subscriptions/glob_matcher.h"

#include <gtest/gtest.h>

#include <ostream>

namespace weir::subscriptions {
namespace {

struct glob_case {
  const char* pattern;
  const char* path;
  bool match;
};

// Readable (and stable) test names: gtest would print the struct's bytes, pointers included.
void PrintTo(const glob_case& c, std::ostream* os) {
  *os << c.pattern << (c.match ? " matches " : " does not match ") << c.path;
}

class glob_table : public ::testing::TestWithParam<glob_case> {};

TEST_P(glob_table, matches_as_specified) {
  const auto& c = GetParam();
  auto g = glob_matcher::compile(c.pattern);
  ASSERT_TRUE(g.has_value()) << c.pattern;
  EXPECT_EQ(g->matches(c.path), c.match) << c.pattern << " vs " << c.path;
}

// PROTOCOL.md 6.2: `*` matches one path segment, `**` zero or more.
INSTANTIATE_TEST_SUITE_P(
    protocol_rules, glob_table,
    ::testing::Values(
        glob_case{"events/*", "events/abc", true}, glob_case{"events/*", "events", false},
        glob_case{"events/*", "events/a/b", false}, glob_case{"events/*", "other/abc", false},
        glob_case{"events/**", "events", true}, glob_case{"events/**", "events/a", true},
        glob_case{"events/**", "events/a/b/c", true}, glob_case{"events/**", "eventsx/a", false},
        glob_case{"**", "a", true}, glob_case{"**", "a/b/c", true}, glob_case{"**/tail", "tail", true},
        glob_case{"**/tail", "x/y/tail", true}, glob_case{"**/tail", "x/y/tail/z", false},
        glob_case{"a/**/z", "a/z", true}, glob_case{"a/**/z", "a/b/c/z", true},
        glob_case{"a/**/z", "a/b/c", false}, glob_case{"*/b", "a/b", true}, glob_case{"*/b", "b", false},
        glob_case{"events/exact", "events/exact", true}, glob_case{"events/exact", "events/exactly", false},
        glob_case{"events/order-*", "events/order-42", true},
        glob_case{"events/order-*", "events/invoice-42", false}, glob_case{"/events/*", "events/x", true},
        glob_case{"events/*", "/events/x", true}, glob_case{"a/**/**/b", "a/b", true},
        glob_case{"*/*", "a/b", true}, glob_case{"*/*", "a", false}));

TEST(glob_matcher, rejects_bad_patterns) {
  EXPECT_FALSE(glob_matcher::compile(""));
  EXPECT_FALSE(glob_matcher::compile("a//b"));
  EXPECT_FALSE(glob_matcher::compile("a/**x/b"));
  EXPECT_FALSE(glob_matcher::compile("a/x**"));
  EXPECT_FALSE(glob_matcher::compile(std::string("a/\x01")));
}

TEST(glob_matcher, literal_prefix_bounds_the_listing) {
  EXPECT_EQ(glob_matcher::compile("events/*")->literal_prefix(), "events/");
  EXPECT_EQ(glob_matcher::compile("a/b/**/c")->literal_prefix(), "a/b/");
  EXPECT_EQ(glob_matcher::compile("**")->literal_prefix(), "");
  EXPECT_EQ(glob_matcher::compile("events/order-*")->literal_prefix(), "events/");
  EXPECT_EQ(glob_matcher::compile("events/exact")->literal_prefix(), "events/exact");
}

TEST(glob_matcher, deep_double_star_paths_stay_cheap) {
  // Many `**` against a long non-matching path: the backtracking is bounded (would hang if exponential).
  auto g = glob_matcher::compile("**/a/**/a/**/a/**/a/**/b");
  std::string path;
  for (int i = 0; i < 200; ++i) path += "a/";
  path += "c";
  EXPECT_FALSE(g->matches(path));
  EXPECT_TRUE(g->matches(path.substr(0, path.size() - 1) + "b"));
}

TEST(stream_path, normalises_and_rejects) {
  EXPECT_EQ(normalize_stream_path("/events/a"), "events/a");
  EXPECT_EQ(normalize_stream_path("events/a"), "events/a");
  EXPECT_FALSE(normalize_stream_path(""));
  EXPECT_FALSE(normalize_stream_path("/"));
  EXPECT_FALSE(normalize_stream_path("a//b"));
  EXPECT_FALSE(normalize_stream_path("a/../b"));
  EXPECT_FALSE(normalize_stream_path("./a"));
  EXPECT_FALSE(normalize_stream_path("a/"));
  EXPECT_FALSE(normalize_stream_path("__ds/subscriptions"));  // PROTOCOL.md 6: reserved
  EXPECT_EQ(normalize_stream_path("a/__ds"), "a/__ds");
}

}  // namespace
}  // namespace weir::subscriptions
