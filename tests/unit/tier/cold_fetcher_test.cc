// cold_fetcher: reads across blocks, the block and footer caches (counted in the fake store's requests),
// read-ahead for a sequential reader, the cache's bound, and corrupt or failing GETs that cache nothing.
#include "tier/cold_fetcher.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "tier/mem_object_store.h"

namespace weir::tier {
namespace {

using streams::stream_offset;

constexpr std::uint32_t block = 256;

std::string data_of(std::size_t n) {
  std::string s;
  while (s.size() < n) s += std::to_string(s.size()) + ",";
  s.resize(n);
  return s;
}

std::string text_of(const object_bytes& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

struct fixture {
  // One object of 10 blocks and a bit: "/a" then "/b".
  fixture() : data(data_of(10 * block + 100)) {
    object_writer w(cold_group(1), block);
    object_bytes bytes(data.size());
    std::memcpy(bytes.data(), data.data(), data.size());
    // "/a" in records of 100 bytes (the record table's entries).
    std::vector<object_record> records;
    for (std::uint64_t at = 0; at < 1000; at += 100) {
      records.push_back(object_record{stream_offset(at), stream_offset(at + 100), 1});
    }
    w.add("/a", stream_offset(0), stream_offset(1000), std::span(bytes).first(1000), records);
    w.add("/b", stream_offset(0), stream_offset(data.size() - 1000), std::span(bytes).subspan(1000));
    auto obj = w.finish();
    size = obj.size();
    EXPECT_TRUE(store.put(key, obj));
  }
  std::string read(cold_fetcher& f, std::uint64_t p, std::uint64_t n) {
    auto r = f.read(key, size, p, n);
    EXPECT_TRUE(r) << r.err().describe();
    return r ? text_of(*r) : std::string();
  }
  std::uint64_t gets() const { return store.requests(store_op::get); }

  const std::string key = "e0001/g00000001/t0000000000000001-s0000000000000000.obj";
  std::string data;
  std::uint64_t size = 0;
  mem_object_store store;
};

TEST(cold_fetcher, reads_across_blocks_and_a_second_read_is_served_from_the_cache) {
  fixture fx;
  cold_fetcher f(fx.store, {.cache_bytes = 1 << 20, .footers = 16, .read_ahead_blocks = 0});
  EXPECT_EQ(fx.read(f, 200, 700), fx.data.substr(200, 700));  // blocks 0..3
  const auto after_first = fx.gets();
  EXPECT_EQ(after_first, 2u);  // the footer (tail) and one aligned range
  EXPECT_EQ(fx.read(f, 300, 400), fx.data.substr(300, 400));
  EXPECT_EQ(fx.gets(), after_first);
  EXPECT_EQ(fx.read(f, 10 * block, 100), fx.data.substr(10 * block, 100));  // the short last block
  EXPECT_EQ(fx.gets(), after_first + 1);                                    // the footer is cached too
  auto st = f.stats();
  EXPECT_GT(st.block_hits, 0u);
  EXPECT_EQ(st.failures, 0u);
}

TEST(cold_fetcher, record_at_finds_a_record_start_in_the_range_holding_it) {
  fixture fx;
  cold_fetcher f(fx.store);
  auto at = f.record_at(fx.key, fx.size, "/a", stream_offset(300));
  ASSERT_TRUE(at) << at.err().describe();
  ASSERT_TRUE(at->has_value());
  EXPECT_EQ((*at)->end, stream_offset(400));
  EXPECT_EQ((*at)->messages, 1u);
  auto inside = f.record_at(fx.key, fx.size, "/a", stream_offset(350));  // not a record's start
  ASSERT_TRUE(inside);
  EXPECT_FALSE(inside->has_value());
  auto none = f.record_at(fx.key, fx.size, "/b", stream_offset(5));  // a range without records
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  auto other = f.record_at(fx.key, fx.size, "/c", stream_offset(0));  // no such range
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->has_value());
  fx.store.inject({store_op::get, fault_kind::corrupt_read});
  auto corrupt = f.record_at(fx.key, fx.size, "/a", stream_offset(300));
  ASSERT_FALSE(corrupt);
  EXPECT_EQ(corrupt.err().code, "Corrupt");
}

TEST(cold_fetcher, a_sequential_reader_finds_the_next_block_already_fetched) {
  fixture fx;
  cold_fetcher f(fx.store, {.cache_bytes = 1 << 20, .footers = 16, .read_ahead_blocks = 2});
  std::string joined;
  for (std::uint64_t p = 0; p < fx.data.size(); p += block) {
    joined += fx.read(f, p, std::min<std::uint64_t>(block, fx.data.size() - p));
  }
  EXPECT_EQ(joined, fx.data);
  // 11 blocks, each GET brings the block asked for and 2 more: 4 GETs, and the footer.
  EXPECT_EQ(fx.gets(), 1u + 4u);
}

TEST(cold_fetcher, the_cache_stays_within_its_bytes_least_recently_used_out) {
  fixture fx;
  cold_fetcher f(fx.store, {.cache_bytes = 3 * block, .footers = 16, .read_ahead_blocks = 0});
  for (std::uint64_t b = 0; b < 6; ++b) EXPECT_EQ(fx.read(f, b * block, 10), fx.data.substr(b * block, 10));
  EXPECT_LE(f.stats().cached_bytes, 3u * block);
  const auto before = fx.gets();
  fx.read(f, 5 * block, 10);  // recent: cached
  EXPECT_EQ(fx.gets(), before);
  fx.read(f, 0, 10);  // evicted: fetched again
  EXPECT_EQ(fx.gets(), before + 1);
}

TEST(cold_fetcher, a_corrupt_block_is_an_error_and_is_not_cached) {
  fixture fx;
  cold_fetcher f(fx.store, {.cache_bytes = 1 << 20, .footers = 16, .read_ahead_blocks = 0});
  ASSERT_TRUE(f.footer(fx.key, fx.size));
  fx.store.inject(injected_fault{store_op::get, fault_kind::corrupt_read, {}, ""});
  auto bad = f.read(fx.key, fx.size, 0, 100);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.err().code, "Corrupt");
  EXPECT_EQ(f.stats().failures, 1u);
  EXPECT_EQ(f.stats().cached_bytes, 0u);
  EXPECT_EQ(fx.read(f, 0, 100), fx.data.substr(0, 100));  // the next read fetches again
}

TEST(cold_fetcher, a_failing_store_is_reported_and_a_read_past_the_data_is_refused) {
  fixture fx;
  cold_fetcher f(fx.store, {.cache_bytes = 1 << 20, .footers = 16, .read_ahead_blocks = 0});
  fx.store.inject(injected_fault{store_op::get, fault_kind::error,
                                 make_store_error(store_errc::throttled, "slow down", 503)});
  auto r = f.read(fx.key, fx.size, 0, 10);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().kind, store_errc::throttled);
  auto past = f.read(fx.key, fx.size, fx.data.size() - 5, 10);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.err().kind, store_errc::invalid);
  auto footer = f.footer(fx.key, fx.size);
  ASSERT_TRUE(footer);
  ASSERT_EQ((*footer)->ranges.size(), 2u);
  EXPECT_EQ((*footer)->ranges[1].stream, "/b");
}

}  // namespace
}  // namespace weir::tier
