// The behaviour every object_store must share, as one check run against each implementation: the fake
// (tests/unit/tier/mem_object_store_test.cc) and S3 through s3rver (tests/integration/s3/). Keeping the
// fake honest is what lets the cluster simulation trust it. `base` is a key prefix of the caller's, so
// runs do not see each other's keys. Leaves out what s3rver does not implement (If-None-Match).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tier/object_store.h"

namespace weir::tier::test {

inline object_bytes contract_bytes(std::string_view s) {
  auto b = std::as_bytes(std::span(s.data(), s.size()));
  return object_bytes(b.begin(), b.end());
}

inline std::string contract_text(const object_bytes& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

inline void check_object_store_contract(object_store& s, const std::string& base) {
  const std::string k = base + "obj";
  // PUT, then HEAD and GET see it; the etag is the PUT's, and the same bytes give the same etag.
  auto put = s.put(k, contract_bytes("0123456789"));
  ASSERT_TRUE(put) << put.err().describe();
  EXPECT_EQ(put->size, 10u);
  auto head = s.head(k);
  ASSERT_TRUE(head) << head.err().describe();
  EXPECT_EQ(head->size, 10u);
  EXPECT_EQ(head->etag, put->etag);
  auto again = s.put(k, contract_bytes("0123456789"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->etag, put->etag);

  // Ranges: whole, inside, open-ended, cut at the end; past the end is bad_range.
  struct range_case {
    std::uint64_t offset, length;
    const char* want;
  };
  for (const auto& c : std::vector<range_case>{
           {0, 0, "0123456789"}, {2, 3, "234"}, {7, 0, "789"}, {8, 50, "89"}, {9, 1, "9"}}) {
    auto r = s.get_range(k, c.offset, c.length);
    ASSERT_TRUE(r) << c.offset << "+" << c.length << ": " << r.err().describe();
    EXPECT_EQ(contract_text(r->bytes), c.want) << c.offset << "+" << c.length;
    EXPECT_EQ(r->object_size, 10u);
  }
  auto past = s.get_range(k, 10, 1);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.err().kind, store_errc::bad_range);

  // Missing keys.
  auto missing = s.get_range(base + "missing", 0, 0);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.err().kind, store_errc::not_found);
  EXPECT_EQ(missing.err().http_status, 404);
  auto missing_head = s.head(base + "missing");
  ASSERT_FALSE(missing_head);
  EXPECT_EQ(missing_head.err().kind, store_errc::not_found);
  EXPECT_TRUE(s.remove(base + "missing"));

  // Listing: by prefix, in key order, in pages of max_keys, each key once.
  for (int i = 6; i >= 0; --i)
    ASSERT_TRUE(s.put(fmt::format("{}list/{:02}", base, i), contract_bytes("abc")));
  ASSERT_TRUE(s.put(base + "listing-not", contract_bytes("x")));  // shares the prefix "list" but not "list/"
  std::vector<std::string> keys;
  std::string token;
  int pages = 0;
  do {
    auto page = s.list(base + "list/", token, 3);
    ASSERT_TRUE(page) << page.err().describe();
    ++pages;
    EXPECT_LE(page->objects.size(), 3u);
    for (const auto& o : page->objects) {
      keys.push_back(o.key);
      EXPECT_EQ(o.size, 3u);
    }
    token = page->truncated ? page->next_token : "";
  } while (!token.empty() && pages < 10);
  ASSERT_EQ(keys.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(keys[i], fmt::format("{}list/{:02}", base, i));
  EXPECT_GE(pages, 3);
  auto none = s.list(base + "nothing/", "", 10);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->objects.empty());
  EXPECT_FALSE(none->truncated);

  // Delete: gone for GET, HEAD and listings.
  ASSERT_TRUE(s.remove(base + "list/03"));
  EXPECT_EQ(s.head(base + "list/03").err().kind, store_errc::not_found);
  auto after = s.list(base + "list/", "", 10);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->objects.size(), 6u);

  // What no store sends.
  EXPECT_EQ(s.put("", contract_bytes("x")).err().kind, store_errc::invalid);
  EXPECT_EQ(s.list(base, "", 0).err().kind, store_errc::invalid);
  EXPECT_EQ(s.list(base, "", object_store::max_list_keys + 1).err().kind, store_errc::invalid);
}

}  // namespace weir::tier::test
