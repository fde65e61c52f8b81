// hot_tier::resolve: the cold slices of a read plan are read back from the log's segments, runs of
// nearby records together (segment_reader::read_data_many), in plan order; a damaged record cuts the
// plan before its slice and the error is returned. hot_tier::admit: deleted streams leave neither
// FIFO entries nor counted bytes behind.
#include "tier/hot_tier.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "storage/log_format.h"
#include "storage/log_writer.h"
#include "unit/storage/test_util.h"
#include "unit/streams/command_builders.h"

namespace weir::tier {
namespace {

using storage::testing::bytes_of;

const std::string dir = "/data/core-0";

std::string pattern(std::size_t n, int salt) {
  std::string s(n, ' ');
  for (std::size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>('a' + (i * 7 + static_cast<std::size_t>(salt)) % 26);
  return s;
}

struct hot_tier_resolve_test : ::testing::Test {
  storage::mem_env mem;
  std::vector<storage::append_ack> acks;
  std::vector<std::string> payloads;

  void SetUp() override {
    std::vector<storage::testing::replayed> ignored;
    auto rec = storage::testing::recover_into(mem, dir, ignored);
    ASSERT_TRUE(rec) << rec.err().reason;
    storage::testing::completion_queue q;
    auto w = storage::log_writer::open(mem, dir, storage::log_options{}, *rec, q.exec());
    ASSERT_TRUE(w) << w.err().reason;
    for (int i = 0; i < 20; ++i) payloads.push_back(pattern(40 + i, i));
    for (const std::string& p : payloads) {
      (*w)->append(1, bytes_of(p), [&](result<storage::append_ack> r) {
        ASSERT_TRUE(r) << r.err().reason;
        acks.push_back(*r);
      });
    }
    ASSERT_TRUE(q.run_until([&] { return acks.size() == payloads.size(); }));
  }

  // A plan of one cold slice per record (bytes [5, 15) of its data, which starts 2 bytes into the
  // payload), with a hot slice after the tenth; `expected` gets the bytes it stands for.
  streams::read_plan plan(std::string& expected) const {
    streams::read_plan p;
    for (std::size_t i = 0; i < acks.size(); ++i) {
      streams::chunk_slice s;
      s.at = streams::disk_location{acks[i].pos.segment.value(), acks[i].pos.offset, 0, 2};
      s.begin = 3;
      s.size = 10;
      p.slices.push_back(s);
      expected += payloads[i].substr(5, 10);
      if (i == 9) {
        streams::chunk_slice hot{streams::make_chunk("HOT"), 0, 3, {}};
        p.slices.push_back(hot);
        expected += "HOT";
      }
    }
    p.bytes = expected.size();
    p.next = streams::stream_offset(1000 + expected.size());
    p.up_to_date = true;
    return p;
  }
};

std::string join(const streams::read_plan& p) {
  std::string out;
  for (const auto& s : p.slices) out.append(s.view());
  return out;
}

TEST_F(hot_tier_resolve_test, cold_slices_read_back_in_plan_order) {
  storage::segment_reader reader(mem, dir);
  hot_tier tier(1 << 20, {&reader});
  std::string expected;
  streams::read_plan p = plan(expected);
  ASSERT_TRUE(tier.resolve(p).has_value());
  EXPECT_EQ(join(p), expected);
  EXPECT_EQ(p.bytes, expected.size());
  EXPECT_TRUE(p.up_to_date);
}

TEST_F(hot_tier_resolve_test, a_damaged_record_cuts_the_plan_before_its_slice) {
  const std::string path = dir + "/" + storage::format::segment_file_name(acks[14].pos.segment);
  auto bytes = *mem.contents(path);
  bytes[acks[14].pos.offset + storage::format::record_header_size + 30] ^= std::byte{1};
  mem.set_contents(path, bytes);
  storage::segment_reader reader(mem, dir);
  hot_tier tier(1 << 20, {&reader});
  std::string expected;
  streams::read_plan p = plan(expected);
  status st = tier.resolve(p);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(p.slices.size(), 15u);  // records 0..13 and the hot slice
  const std::string kept = expected.substr(0, 14 * 10 + 3);
  EXPECT_EQ(join(p), kept);
  EXPECT_EQ(p.bytes, kept.size());
  EXPECT_EQ(p.next.value(), 1000 + kept.size());
  EXPECT_FALSE(p.up_to_date);
}

// Admits records of streams that `sm` holds, each at a new place in segment 1 (admit reads nothing).
struct admitter {
  streams::state_machine& sm;
  hot_tier& tier;
  std::uint64_t offset = 0;

  void create(const std::string& path) {
    ASSERT_EQ(sm.create(streams::testing::make_create(path)).code, streams::errc::ok);
  }
  void append(const std::string& path, std::size_t size) {
    streams::outcome o = sm.append(streams::testing::make_append(path, std::string(size, 'x')));
    ASSERT_EQ(o.code, streams::errc::ok);
    ASSERT_TRUE(o.meta);
    offset += 1000;
    tier.admit(sm, o.meta->generation, o.meta->tail.value(), static_cast<std::uint32_t>(size),
               streams::disk_location{1, offset, 0, 20});
  }
  void remove(const std::string& path) {
    ASSERT_EQ(sm.remove(streams::delete_command{path, streams::testing::t0}).code, streams::errc::ok);
  }
};

// The soak's rotation (streams filled, deleted and created anew, all within the budget): the FIFO
// held an entry for every record ever admitted until the budget was reached, 24 bytes per append
// (0.55 MiB a minute at 400 appends/s), and bytes() counted the deleted streams' data as held.
TEST(hot_tier_admit, deleted_streams_leave_neither_entries_nor_bytes_behind) {
  storage::mem_env mem;
  storage::segment_reader reader(mem, dir);
  hot_tier tier(64 << 20, {&reader});
  streams::state_machine sm;
  admitter a{sm, tier};
  constexpr int slots = 16;
  constexpr int per_stream = 100;
  constexpr std::size_t record = 100;
  std::size_t most_entries = 0;
  for (int round = 0; round < 50; ++round) {
    for (int s = 0; s < slots; ++s) a.create(fmt::format("/r{}/s{}", round, s));
    for (int i = 0; i < per_stream; ++i) {
      for (int s = 0; s < slots; ++s) a.append(fmt::format("/r{}/s{}", round, s), record);
    }
    most_entries = std::max(most_entries, tier.entries());
    for (int s = 0; s < slots; ++s) a.remove(fmt::format("/r{}/s{}", round, s));
  }
  // 80,000 records admitted; at most about twice the 1,600 of the streams that exist are tracked.
  EXPECT_LE(most_entries, 2u * slots * per_stream + slots);
  EXPECT_EQ(tier.evicted(), 0u);
  // The last round's streams are deleted: the next admit forgets them.
  a.create("/last");
  a.append("/last", record);
  EXPECT_EQ(tier.bytes(), record);
  EXPECT_LE(tier.entries(), 2u * slots * per_stream + slots);
}

// A deleted stream's bytes no longer count against the budget, so they do not push the records of
// the streams that remain out of memory.
TEST(hot_tier_admit, a_deleted_stream_s_bytes_do_not_evict_the_live_ones) {
  storage::mem_env mem;
  storage::segment_reader reader(mem, dir);
  hot_tier tier(10'000, {&reader});
  streams::state_machine sm;
  admitter a{sm, tier};
  a.create("/a");
  a.create("/b");
  a.create("/c");
  for (int i = 0; i < 50; ++i) a.append("/a", 100);
  for (int i = 0; i < 50; ++i) a.append("/b", 100);
  EXPECT_EQ(tier.bytes(), 10'000u);
  a.remove("/b");
  for (int i = 0; i < 40; ++i) a.append("/c", 100);
  EXPECT_EQ(tier.bytes(), 9'000u);
  EXPECT_EQ(tier.evicted(), 0u);
  EXPECT_FALSE(sm.read("/a", std::nullopt, 100).plan.slices.at(0).cold());
  // Over the budget again: the oldest live records go first.
  for (int i = 0; i < 20; ++i) a.append("/c", 100);
  EXPECT_EQ(tier.bytes(), 10'000u);
  EXPECT_EQ(tier.evicted(), 10u);
  EXPECT_TRUE(sm.read("/a", std::nullopt, 100).plan.slices.at(0).cold());
  EXPECT_FALSE(sm.read("/a", streams::stream_offset(1000), 100).plan.slices.at(0).cold());
}

}  // namespace
}  // namespace weir::tier
