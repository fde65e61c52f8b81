// streams::inline_snapshot (and inline_snapshot_part): the blob a restore snapshot carries
// (docs/cold-tier.md, "Restore"): records in objects forgotten, every other record's bytes inlined from the
// local disk, nothing else changed.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "streams/command_codec.h"
#include "streams/state_machine.h"
#include "unit/streams/command_builders.h"

namespace weir::streams {
namespace {

using namespace testing;

std::span<const std::byte> as_span(const std::vector<std::byte>& v) {
  return {v.data(), v.size()};
}

// "hello" (on disk, segment 4), "world" (on disk, segment 5), "!" (in memory, not located yet) in /s;
// "tt" (on disk) in /t. `disk` gets the bytes at each location, as a segment reader would read them.
void sample(state_machine& x, std::map<std::uint64_t, std::string>& disk) {
  EXPECT_EQ(x.create(make_create("/s", "text/plain", "hello")).code, errc::ok);
  EXPECT_EQ(x.append(make_append("/s", "world")).code, errc::ok);
  EXPECT_EQ(x.append(make_append("/s", "!")).code, errc::ok);
  EXPECT_TRUE(x.locate(1, 5, disk_location{4, 40, 0, 9}));
  EXPECT_TRUE(x.locate(1, 10, disk_location{5, 0, 0, 12}));
  EXPECT_GT(x.evict(1, 5), 0u);
  EXPECT_GT(x.evict(1, 10), 0u);
  EXPECT_EQ(x.create(make_create("/t", "text/plain", "tt")).code, errc::ok);
  EXPECT_TRUE(x.locate(2, 2, disk_location{4, 90, 0, 9}));
  EXPECT_GT(x.evict(2, 2), 0u);
  disk = {{40, "hello"}, {0, "world"}, {90, "tt"}};
}

// Every byte of `path` from `from`, as a reader sees it (the held records only).
std::string bytes_of(const state_machine& sm, const std::string& path, std::uint64_t from = 0) {
  auto log = sm.log_of(path);
  if (!log) return "<no stream>";
  read_plan plan = log->read(stream_offset(from), 1 << 20, false);
  std::string out;
  for (const auto& slice : plan.slices)
    out += slice.cold() ? std::string("<cold>") : std::string(slice.view());
  return out;
}

TEST(snapshot_inline, a_groups_part_is_inlined_the_same_way) {
  state_machine live;
  std::map<std::uint64_t, std::string> disk;
  sample(live, disk);
  auto part = live.snapshot_part([](std::string_view p) { return p == "/s"; },
                                 [](const disk_location&) { return true; });
  ASSERT_TRUE(part) << part.err().reason;
  auto blob = inline_snapshot_part(
      as_span(*part), [](const std::string&) -> std::optional<stream_offset> { return stream_offset(5); },
      [&](const part_reference& r) -> result<chunk> {
        return make_chunk(disk.at(r.at.offset).substr(r.begin, r.size));
      });
  ASSERT_TRUE(blob) << blob.err().reason;
  state_machine restored;
  ASSERT_TRUE(restored.restore_part(as_span(*blob), [](std::string_view p) { return p == "/s"; }));
  EXPECT_EQ(restored.log_of("/s")->held_from(), stream_offset(5));
  EXPECT_EQ(bytes_of(restored, "/s", 5), "world!");
  EXPECT_EQ(restored.log_of("/t"), nullptr);
  EXPECT_TRUE(restored.referenced_segments(0).empty());
  // A damaged part is an error.
  auto cut = *part;
  cut.resize(cut.size() / 2);
  EXPECT_FALSE(inline_snapshot_part(
      as_span(cut), [](const std::string&) { return std::optional<stream_offset>(); },
      [&](const part_reference&) -> result<chunk> { return make_chunk("x"); }));
}

TEST(snapshot_inline, records_in_objects_go_and_the_rest_is_inlined) {
  state_machine live;
  std::map<std::uint64_t, std::string> disk;
  sample(live, disk);
  std::vector<part_reference> reads;
  auto blob = inline_snapshot(
      as_span(live.snapshot()),
      [](const std::string& path) -> std::optional<stream_offset> {
        if (path == "/s") return stream_offset(7);  // in objects up to 7: "hello" (ends at 5) goes
        return std::nullopt;
      },
      [&](const part_reference& r) -> result<chunk> {
        reads.push_back(r);
        return make_chunk(disk.at(r.at.offset).substr(r.begin, r.size));
      });
  ASSERT_TRUE(blob) << blob.err().reason;
  // Only what stays is read: "world" and "tt", not the forgotten "hello" nor the "!" in memory.
  std::sort(reads.begin(), reads.end(),
            [](const part_reference& a, const part_reference& b) { return a.at.segment < b.at.segment; });
  EXPECT_EQ(reads, (std::vector<part_reference>{{disk_location{4, 90, 0, 9}, 0, 2},
                                                {disk_location{5, 0, 0, 12}, 0, 5}}));
  state_machine restored;
  ASSERT_TRUE(restored.restore(as_span(*blob)));
  EXPECT_EQ(restored.log_of("/s")->held_from(), stream_offset(5));
  EXPECT_EQ(restored.log_of("/s")->tail(), stream_offset(11));
  EXPECT_EQ(bytes_of(restored, "/s", 5), "world!");
  EXPECT_EQ(bytes_of(restored, "/t"), "tt");
  // No record refers to a disk any more: a node with an empty data directory can hold it.
  EXPECT_TRUE(restored.referenced_segments(0).empty());
  // Metadata as before: the next create gets the next generation.
  EXPECT_EQ(restored.create(make_create("/u")).meta->generation, 3u);
}

TEST(snapshot_inline, a_failed_or_short_read_fails_the_whole_blob) {
  state_machine live;
  std::map<std::uint64_t, std::string> disk;
  sample(live, disk);
  auto none = [](const std::string&) -> std::optional<stream_offset> { return std::nullopt; };
  auto failed = inline_snapshot(as_span(live.snapshot()), none, [](const part_reference&) -> result<chunk> {
    return make_error(codec_errc::truncated, "segment gone");
  });
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.err().reason.find("segment gone"), std::string::npos);
  auto short_read = inline_snapshot(as_span(live.snapshot()), none,
                                    [](const part_reference&) -> result<chunk> { return make_chunk("x"); });
  ASSERT_FALSE(short_read);
  EXPECT_NE(short_read.err().reason.find("short"), std::string::npos);
  std::vector<std::byte> garbage(20, std::byte{7});
  EXPECT_FALSE(inline_snapshot(as_span(garbage), none,
                               [](const part_reference&) -> result<chunk> { return make_chunk(""); }));
}

}  // namespace
}  // namespace weir::streams
