// mem_object_store: S3's semantics (ranges, listing pages, If-None-Match, delete of a missing key) and
// every fault it injects, deterministic for a seed.
#include "tier/mem_object_store.h"

#include <gtest/gtest.h>

#include <thread>

#include "unit/tier/object_store_contract.h"

namespace weir::tier {
namespace {

object_bytes bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span(s.data(), s.size()));
  return object_bytes(b.begin(), b.end());
}

std::string text_of(const object_bytes& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

TEST(mem_object_store, put_get_head_remove) {
  mem_object_store s;
  auto put = s.put("a", bytes_of("0123456789"));
  ASSERT_TRUE(put);
  EXPECT_EQ(put->size, 10u);
  EXPECT_EQ(s.head("a")->etag, put->etag);
  EXPECT_EQ(text_of(s.get_range("a", 0, 0)->bytes), "0123456789");
  EXPECT_EQ(text_of(s.get_range("a", 2, 3)->bytes), "234");
  EXPECT_EQ(text_of(s.get_range("a", 8, 100)->bytes), "89");
  EXPECT_EQ(s.get_range("a", 8, 100)->object_size, 10u);
  EXPECT_EQ(s.get_range("a", 10, 1).err().kind, store_errc::bad_range);
  EXPECT_EQ(s.get_range("b", 0, 0).err().kind, store_errc::not_found);
  EXPECT_EQ(s.head("b").err().kind, store_errc::not_found);
  ASSERT_TRUE(s.remove("a"));
  EXPECT_TRUE(s.remove("a"));  // S3: 204 for a missing key too
  EXPECT_FALSE(s.contents("a"));
  // Another PUT with other bytes changes the etag.
  ASSERT_TRUE(s.put("c", bytes_of("x")));
  auto e1 = s.head("c")->etag;
  ASSERT_TRUE(s.put("c", bytes_of("y")));
  EXPECT_NE(s.head("c")->etag, e1);
}

TEST(mem_object_store, behaves_as_s3_does) {
  mem_object_store s;
  test::check_object_store_contract(s, "contract/");
}

TEST(mem_object_store, refuses_what_s3_refuses) {
  mem_object_store s;
  EXPECT_EQ(s.put("", bytes_of("x")).err().kind, store_errc::invalid);
  object_bytes big(object_store::max_object_bytes + 1);
  EXPECT_EQ(s.put("big", big).err().kind, store_errc::invalid);
  EXPECT_EQ(s.list("", "", 0).err().kind, store_errc::invalid);
  EXPECT_EQ(s.list("", "bogus", 10).err().kind, store_errc::other);
}

TEST(mem_object_store, if_absent_answers412) {
  mem_object_store s;
  ASSERT_TRUE(s.put("k", bytes_of("one"), put_options{true}));
  auto again = s.put("k", bytes_of("two"), put_options{true});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.err().kind, store_errc::precondition_failed);
  EXPECT_EQ(again.err().http_status, 412);
  EXPECT_EQ(text_of(*s.contents("k")), "one");
}

TEST(mem_object_store, list_pages_in_key_order) {
  mem_object_store s;
  for (int i = 24; i >= 0; --i) ASSERT_TRUE(s.put(fmt::format("p/{:02}", i), bytes_of("x")));
  ASSERT_TRUE(s.put("q/0", bytes_of("x")));
  ASSERT_TRUE(s.put("o/0", bytes_of("x")));
  std::vector<std::string> keys;
  std::string token;
  int pages = 0;
  do {
    auto page = s.list("p/", token, 10);
    ASSERT_TRUE(page);
    ++pages;
    for (auto& o : page->objects) keys.push_back(o.key);
    token = page->next_token;
    EXPECT_EQ(page->truncated, !token.empty());
  } while (!token.empty());
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(keys.size(), 25u);
  EXPECT_EQ(keys.front(), "p/00");
  EXPECT_EQ(keys.back(), "p/24");
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
}

TEST(mem_object_store, injected_errors_hit_the_named_operation_and_keys) {
  mem_object_store s;
  s.inject({store_op::put, fault_kind::error,
            make_store_error(store_errc::conflict, "busy", 409, "OperationAborted"), "hot/"},
           2);
  ASSERT_TRUE(s.put("cold/a", bytes_of("x")));  // another prefix: untouched
  auto r1 = s.put("hot/a", bytes_of("x"));
  auto r2 = s.put("hot/b", bytes_of("x"));
  ASSERT_FALSE(r1);
  ASSERT_FALSE(r2);
  EXPECT_EQ(r1.err().kind, store_errc::conflict);
  EXPECT_EQ(r1.err().http_status, 409);
  EXPECT_TRUE(s.put("hot/c", bytes_of("x")));  // the two were used up
  EXPECT_FALSE(s.contents("hot/a"));           // an error answer applies nothing
  EXPECT_EQ(s.faults_hit(), 2u);
  EXPECT_EQ(s.requests(store_op::put), 4u);
}

TEST(mem_object_store, timeouts_and_resets_before_and_after_applying) {
  mem_object_store s;
  s.inject({store_op::put, fault_kind::timeout});
  EXPECT_EQ(s.put("a", bytes_of("x")).err().kind, store_errc::timeout);
  EXPECT_FALSE(s.contents("a"));

  s.inject({store_op::put, fault_kind::reset});
  EXPECT_EQ(s.put("a", bytes_of("x")).err().kind, store_errc::connection);
  EXPECT_FALSE(s.contents("a"));

  // The ambiguous upload: the object landed, the client heard nothing.
  s.inject({store_op::put, fault_kind::timeout_after_apply});
  EXPECT_EQ(s.put("a", bytes_of("x")).err().kind, store_errc::timeout);
  EXPECT_EQ(text_of(*s.contents("a")), "x");

  s.inject({store_op::remove, fault_kind::reset_after_apply});
  EXPECT_EQ(s.remove("a").err().kind, store_errc::connection);
  EXPECT_FALSE(s.contents("a"));

  s.inject({store_op::get, fault_kind::reset});
  ASSERT_TRUE(s.put("b", bytes_of("y")));
  EXPECT_EQ(s.get_range("b", 0, 0).err().kind, store_errc::connection);
  s.inject({store_op::head, fault_kind::timeout});
  EXPECT_EQ(s.head("b").err().kind, store_errc::timeout);
  s.inject(
      {store_op::list, fault_kind::error, make_store_error(store_errc::throttled, "slow", 503, "SlowDown")});
  EXPECT_EQ(s.list("", "", 10).err().kind, store_errc::throttled);
}

TEST(mem_object_store, partial_and_corrupt_reads) {
  mem_object_store s;
  ASSERT_TRUE(s.put("a", bytes_of("0123456789")));
  s.inject({store_op::get, fault_kind::short_read});
  auto part = s.get_range("a", 0, 10);
  ASSERT_TRUE(part);
  EXPECT_EQ(text_of(part->bytes), "01234");
  EXPECT_EQ(part->object_size, 10u);
  s.inject({store_op::get, fault_kind::corrupt_read});
  auto bad = s.get_range("a", 0, 10);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->bytes.size(), 10u);
  EXPECT_NE(text_of(bad->bytes), "0123456789");
  EXPECT_EQ(text_of(*s.contents("a")), "0123456789");  // the stored bytes are intact
}

TEST(mem_object_store, stall_blocks_until_released) {
  mem_object_store s;
  s.inject({store_op::put, fault_kind::stall});
  store_result<object_info> r = make_store_error(store_errc::other, "not run");
  std::thread t([&] { r = s.put("a", bytes_of("x")); });
  s.wait_for_stalled(1);
  EXPECT_FALSE(s.contents("a"));                                 // still in flight
  EXPECT_TRUE(s.head("z").err().kind == store_errc::not_found);  // other calls go on meanwhile
  s.release_stalls();
  t.join();
  EXPECT_TRUE(r);
  EXPECT_TRUE(s.contents("a"));
}

std::vector<std::string> fault_trace(std::uint64_t seed) {
  mem_object_store s;
  s.set_random_faults(0.5, seed);
  std::vector<std::string> trace;
  for (int i = 0; i < 200; ++i) {
    auto r = s.put(fmt::format("k{}", i % 7), bytes_of("v"));
    trace.push_back(r ? "ok" : r.err().describe());
  }
  return trace;
}

TEST(mem_object_store, random_faults_are_deterministic_per_seed) {
  auto a = fault_trace(1);
  EXPECT_EQ(a, fault_trace(1));
  EXPECT_NE(a, fault_trace(2));
  int failures = 0;
  for (const auto& t : a) {
    if (t != "ok") ++failures;
  }
  EXPECT_GT(failures, 50);
  EXPECT_LT(failures, 150);
}

TEST(mem_object_store, random_faults_are_retryable_only) {
  mem_object_store s;
  s.set_random_faults(1.0, 9);
  for (int i = 0; i < 100; ++i) {
    auto r = s.get_range("missing", 0, 0);
    ASSERT_FALSE(r);
    EXPECT_TRUE(is_retryable(r.err().kind)) << r.err().describe();
  }
  s.clear_faults();
  EXPECT_EQ(s.get_range("missing", 0, 0).err().kind, store_errc::not_found);
}

}  // namespace
}  // namespace weir::tier
