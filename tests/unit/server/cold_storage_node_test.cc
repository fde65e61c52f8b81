// The hot tier and checkpoints of a durable node: data beyond the memory budget is read back from the
// log's segment files; a restart loads each core's checkpoint and replays only the log after it; the
// segments that only deleted streams used are reclaimed.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "server/stream_shard.h"
#include "tier/hot_tier.h"

#include "unit/server/durable_node_fixture.h"
#include "unit/server/http_test_client.h"

namespace weir::server {
namespace {

using test_support::http;
using test_support::path_on;
using test_support::reply;

const std::map<std::string, std::string> text = {{"Content-Type", "application/octet-stream"}};

// Bytes that differ from record to record and from stream to stream, so a misplaced read shows.
std::string pattern(const std::string& path, int record, std::size_t size) {
  std::string s(size, '\0');
  std::uint64_t x =
      std::hash<std::string>{}(path) ^ (static_cast<std::uint64_t>(record) * 0x9e3779b97f4a7c15ull);
  for (char& c : s) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>('a' + x % 26);
  }
  return s;
}

class cold_storage_test : public test_support::durable_node_fixture {
 protected:
  // Creates `path` and appends `records` records of `size` bytes; returns the stream's content.
  std::string fill(const std::string& path, int records, std::size_t size) {
    EXPECT_EQ(http(port_, "PUT", path, text).status, 201);
    std::string all;
    for (int i = 0; i < records; ++i) {
      std::string r = pattern(path, i, size);
      EXPECT_EQ(http(port_, "POST", path, text, r).status, 204) << path << " record " << i;
      all += r;
    }
    return all;
  }
  // The whole stream, read in the server's chunks.
  std::string read_all(const std::string& path) {
    std::string all;
    std::string offset = "-1";
    for (int i = 0; i < 100000; ++i) {
      reply r = http(port_, "GET", path + "?offset=" + offset);
      EXPECT_EQ(r.status, 200) << path << " at " << offset;
      if (r.status != 200) break;
      all += r.body;
      offset = r.headers["stream-next-offset"];
      if (r.headers.count("stream-up-to-date")) break;
    }
    return all;
  }
  // Runs `fn` on core `core`'s loop and waits for its answer.
  template <class F>
  auto on_core(unsigned core, F fn) {
    std::promise<decltype(fn(n_->shard(core)))> p;
    auto f = p.get_future();
    n_->shard(core).loop().post([&] { p.set_value(fn(n_->shard(core))); });
    return f.get();
  }
};

TEST_F(cold_storage_test, data_beyond_the_memory_budget_is_read_back_from_disk) {
  cfg_.hot_bytes = 1 << 20;  // 512 KiB per core
  cfg_.checkpoint_bytes = 0;
  ASSERT_TRUE(start().has_value());
  std::map<std::string, std::string> expected;
  for (unsigned core = 0; core < 2; ++core) {
    for (const char* stem : {"a", "b"}) {
      std::string p = path_on(core, std::string(stem) + std::to_string(core));
      expected[p] = fill(p, 40, 24 * 1024 + 7);  // ~1 MiB each, records not aligned to the read chunk
    }
  }
  for (unsigned core = 0; core < 2; ++core) {
    EXPECT_LE(on_core(core, [](stream_shard& s) { return s.part().hot().bytes(); }), std::size_t{512 << 10});
    EXPECT_GT(on_core(core, [](stream_shard& s) { return s.part().hot().evicted(); }), 40u);
  }
  for (auto& [p, want] : expected) EXPECT_TRUE(read_all(p) == want) << p;
  // A fork at an offset inside a cold record (sub-offset prefix read from disk) on the other core.
  std::string src = expected.begin()->first;
  std::string fork = path_on(1, "fork");
  ASSERT_EQ(http(port_, "PUT", fork,
                 {{"Stream-Forked-From", src},
                  {"Stream-Fork-Offset", "0000000000000000_0000000000000000"},
                  {"Stream-Fork-Sub-Offset", "100"}})
                .status,
            201);
  EXPECT_EQ(read_all(fork), expected[src].substr(0, 100));
}

TEST_F(cold_storage_test, a_restart_loads_the_checkpoints_and_replays_only_the_log_after_them) {
  cfg_.hot_bytes = 1 << 20;
  cfg_.checkpoint_bytes = 1 << 20;
  ASSERT_TRUE(start().has_value());
  std::map<std::string, std::string> expected;
  std::string src = path_on(0, "src");
  expected[src] = fill(src, 20, 16 * 1024);
  // A fork on the other core, made before the checkpoints: it comes back from them.
  std::string early = path_on(1, "early");
  ASSERT_EQ(http(port_, "PUT", early, {{"Stream-Forked-From", src}}).status, 201);
  ASSERT_EQ(http(port_, "POST", early, text, "+early").status, 204);
  expected[early] = expected[src] + "+early";
  int commands = 0;
  for (unsigned core = 0; core < 2; ++core) {
    std::string p = path_on(core, "bulk");
    expected[p] = fill(p, 100, 32 * 1024);  // ~3 MiB per core: several checkpoints
    commands += 101;
  }
  // A fork made after the checkpoints: replayed and stitched from its source.
  std::string late = path_on(1, "late");
  ASSERT_EQ(http(port_, "PUT", late, {{"Stream-Forked-From", src}}).status, 201);
  expected[late] = expected[src];
  ASSERT_EQ(
      http(port_, "POST", src, test_support::producer_headers("application/octet-stream", 0), "!").status,
      200);
  expected[src] += "!";
  stop();
  for (unsigned core = 0; core < 2; ++core) EXPECT_EQ(files(core, ".ckpt").size(), 1u) << core;

  ASSERT_TRUE(start().has_value());
  EXPECT_EQ(n_->recovery().checkpoints, 2u);
  EXPECT_LT(n_->recovery().records, static_cast<std::uint64_t>(commands) / 2);
  for (auto& [p, want] : expected) EXPECT_TRUE(read_all(p) == want) << p;
  // The producer's state came back: its retry is a duplicate.
  EXPECT_EQ(
      http(port_, "POST", src, test_support::producer_headers("application/octet-stream", 0), "!").status,
      204);
}

TEST_F(cold_storage_test, segments_used_only_by_deleted_streams_are_reclaimed) {
  // Segments grown as written: the first one then holds kept's data too (with prepared segments it holds
  // only the first batch, which the checkpoint rightly reclaims).
  cfg_.prepare_segments = false;
  cfg_.hot_bytes = 1 << 20;
  cfg_.segment_bytes = 64 << 10;
  cfg_.checkpoint_bytes = 1 << 20;
  ASSERT_TRUE(start().has_value());
  std::string doomed = path_on(0, "doomed"), kept = path_on(0, "kept");
  std::string kept_data = fill(kept, 8, 16 * 1024);
  const std::vector<std::string> with_kept = files(0, ".log");
  (void)fill(doomed, 48, 16 * 1024);
  std::vector<std::string> doomed_only;  // segments written while only doomed was being filled
  for (const std::string& f : files(0, ".log")) {
    if (f > with_kept.back()) doomed_only.push_back(f);
  }
  ASSERT_GT(doomed_only.size(), 8u);
  doomed_only.pop_back();  // the active one, which the deletion and `other` go on writing to
  ASSERT_EQ(http(port_, "DELETE", doomed).status, 204);
  std::string other = path_on(0, "other");
  std::string other_data = fill(other, 70, 16 * 1024);  // past the next checkpoint
  int survivors = 0;
  for (const std::string& f : doomed_only) survivors += std::filesystem::exists(f) ? 1 : 0;
  EXPECT_EQ(survivors, 0) << "of " << doomed_only.size();
  // kept's records stay where they are.
  for (const std::string& f : with_kept) EXPECT_TRUE(std::filesystem::exists(f)) << f;
  stop();
  ASSERT_TRUE(start().has_value());
  EXPECT_TRUE(read_all(kept) == kept_data);
  EXPECT_TRUE(read_all(other) == other_data);
  EXPECT_EQ(http(port_, "GET", doomed).status, 404);
}

}  // namespace
}  // namespace weir::server
