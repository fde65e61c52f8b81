// Scope matching on the path the server acts on: segment-boundary prefixes, `..` and percent-encoded
// paths, and the scope claim of a JWT.
#include "auth/scope.h"

#include <gtest/gtest.h>

namespace weir::auth {
namespace {

scope one(std::string_view prefix, op_set ops) {
  scope s;
  scope_rule r;
  EXPECT_EQ(parse_prefix(prefix, r), "") << prefix;
  r.ops = ops;
  s.rules.push_back(r);
  return s;
}

constexpr op_set rw = static_cast<op_set>(op::read) | static_cast<op_set>(op::write);

// Allowed for `raw` (a request path as sent) as the authorizer decides: canonical, then matched.
bool allows(const scope& s, std::string_view raw, op o) {
  auto p = canonical_path(raw);
  return p && s.allows(*p, o);
}

TEST(scope, a_prefix_covers_itself_and_what_lies_below_it_never_a_longer_name) {
  scope s = one("/v1/stream/a", rw);
  EXPECT_TRUE(allows(s, "/v1/stream/a", op::read));
  EXPECT_TRUE(allows(s, "/v1/stream/a/b/c", op::write));
  EXPECT_FALSE(allows(s, "/v1/stream/ab", op::read));
  EXPECT_FALSE(allows(s, "/v1/stream/a-b", op::read));
  EXPECT_FALSE(allows(s, "/v1/stream", op::read));
  EXPECT_FALSE(allows(s, "/v1/stream/", op::read));
  EXPECT_FALSE(allows(s, "/v1/stream/b", op::read));
  EXPECT_FALSE(allows(s, "/v1/stream/a", op::remove));
  EXPECT_FALSE(allows(s, "/v1/stream/a", op::admin));
}

TEST(scope, a_prefix_ending_in_a_slash_or_a_star) {
  scope dir = one("/v1/stream/a/", rw);
  EXPECT_TRUE(allows(dir, "/v1/stream/a/x", op::read));
  EXPECT_FALSE(allows(dir, "/v1/stream/a", op::read));
  EXPECT_FALSE(allows(dir, "/v1/stream/ab", op::read));
  scope star = one("/v1/stream/tenant-*", rw);
  EXPECT_TRUE(allows(star, "/v1/stream/tenant-1", op::read));
  EXPECT_TRUE(allows(star, "/v1/stream/tenant-", op::read));
  EXPECT_FALSE(allows(star, "/v1/stream/tenant", op::read));
  scope all = one("/", static_cast<op_set>(op::admin));
  EXPECT_TRUE(allows(all, "/metrics", op::admin));
  EXPECT_FALSE(allows(all, "/metrics", op::read));
}

TEST(scope, dot_segments_raw_or_encoded_are_refused) {
  scope s = one("/v1/stream/a", rw);
  for (std::string_view p : {"/v1/stream/a/../b", "/v1/stream/a/..", "/v1/stream/a/./x",
                             "/v1/stream/a/%2e%2e/b", "/v1/stream/a/%2E%2e/b", "/v1/stream/a/.%2e/b",
                             "/v1/stream/a%2F..%2Fb", "/v1/stream/a%2f%2e%2e%2fb", "/v1/stream/a/%2e"}) {
    EXPECT_FALSE(canonical_path(p).has_value()) << p;
    EXPECT_FALSE(allows(s, p, op::read)) << p;
  }
}

TEST(scope, percent_encoded_paths_match_on_what_they_decode_to) {
  scope s = one("/v1/stream/a", rw);
  EXPECT_EQ(canonical_path("/v1/stream/%61"), "/v1/stream/a");
  EXPECT_TRUE(allows(s, "/v1/stream/%61", op::read));
  EXPECT_TRUE(allows(s, "/v1/stream/a%2Fx", op::read));  // decodes below the prefix
  EXPECT_FALSE(allows(s, "/v1/stream/%61b", op::read));  // decodes to /v1/stream/ab
  EXPECT_FALSE(allows(s, "/v1/stream/a%62", op::read));  // the same
  EXPECT_FALSE(allows(s, "/v1/stream/%62", op::read));
  EXPECT_FALSE(allows(s, "/v1/stream/a%zz", op::read));  // a malformed escape
  EXPECT_FALSE(allows(s, "/v1/stream/a%", op::read));
  EXPECT_FALSE(allows(s, "/v1/stream/a%00", op::read));    // a control character
  EXPECT_FALSE(allows(s, "/v1/stream/a%5C..", op::read));  // a backslash
  // A prefix with a character that must be encoded in a URL is written decoded and matches the encoding.
  scope sp = one("/v1/stream/my stream", rw);
  EXPECT_TRUE(allows(sp, "/v1/stream/my%20stream", op::read));
}

TEST(scope, invalid_prefixes_are_named) {
  scope_rule r;
  EXPECT_NE(parse_prefix("", r), "");
  EXPECT_NE(parse_prefix("v1/stream", r), "");
  EXPECT_NE(parse_prefix("/v1/%61", r), "");
  EXPECT_NE(parse_prefix("/v1/../x", r), "");
  EXPECT_NE(parse_prefix("/v1/./x", r), "");
  EXPECT_NE(parse_prefix("/v1/*/x", r), "");
  EXPECT_NE(parse_prefix("/v1/\n", r), "");
  EXPECT_NE(parse_prefix("*", r), "");
  EXPECT_EQ(parse_prefix("/v1/..x", r), "");  // a name that merely starts with dots
}

TEST(scope, the_scope_claim_grants_what_it_names_and_ignores_the_rest) {
  scope s = parse_scope_claim(
      "openid read:/v1/stream/a write,delete:/v1/stream/b/ bogus:/x read:relative "
      "read,fly:/y admin:/v1/stream/t-* read:/v1/../z");
  ASSERT_EQ(s.rules.size(), 3u);
  EXPECT_TRUE(s.allows("/v1/stream/a", op::read));
  EXPECT_FALSE(s.allows("/v1/stream/a", op::write));
  EXPECT_TRUE(s.allows("/v1/stream/b/1", op::remove));
  EXPECT_TRUE(s.allows("/v1/stream/b/1", op::write));
  EXPECT_FALSE(s.allows("/v1/stream/b/1", op::read));
  EXPECT_TRUE(s.allows("/v1/stream/t-9", op::admin));
  EXPECT_FALSE(s.allows("/x", op::read));
  EXPECT_FALSE(s.allows("/y", op::read));
  EXPECT_FALSE(s.allows("/z", op::read));
  EXPECT_TRUE(parse_scope_claim("").rules.empty());
}

TEST(scope, op_names) {
  for (op o : {op::read, op::write, op::remove, op::admin}) EXPECT_EQ(op_from_name(op_name(o)), o);
  EXPECT_EQ(op_from_name("delete"), op::remove);
  EXPECT_FALSE(op_from_name("Read").has_value());
}

}  // namespace
}  // namespace weir::auth
