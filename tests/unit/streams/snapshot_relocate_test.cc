// streams::snapshot_part_references and relocate_snapshot_part: what a snapshot transfer copies to a peer
// and how the peer rewrites the blob to its own copies (docs/replication.md, "Snapshots").
#include <gtest/gtest.h>

#include <map>

#include "streams/state_machine.h"
#include "unit/streams/command_builders.h"

namespace weir::streams {
namespace {

using namespace testing;

bool in_a(std::string_view p) {
  return p.starts_with("/a/");
}

std::span<const std::byte> as_span(const std::vector<std::byte>& v) {
  return {v.data(), v.size()};
}

outcome create_at(state_machine& sm, std::uint64_t g, create_command c) {
  sm.set_next_generation(g);
  return sm.create(c);
}

// A machine with two streams of part A: /a/s with two cold records (segments 4 and 5) and a hot one,
// /a/t with one cold record (segment 4); and /b/x outside the part.
void sample(state_machine& x) {
  EXPECT_EQ(create_at(x, 1, make_create("/a/s", "text/plain", "hello")).code, errc::ok);
  EXPECT_EQ(x.append(make_append("/a/s", "world")).code, errc::ok);
  EXPECT_EQ(x.append(make_append("/a/s", "!")).code, errc::ok);
  EXPECT_TRUE(x.locate(1, 5, disk_location{4, 40, 0, 9}));
  EXPECT_TRUE(x.locate(1, 10, disk_location{5, 0, 0, 12}));
  EXPECT_GT(x.evict(1, 5), 0u);
  EXPECT_GT(x.evict(1, 10), 0u);
  EXPECT_EQ(create_at(x, 2, make_create("/a/t", "text/plain", "tt")).code, errc::ok);
  EXPECT_TRUE(x.locate(2, 2, disk_location{4, 90, 0, 9}));
  EXPECT_GT(x.evict(2, 2), 0u);
  EXPECT_EQ(create_at(x, 3, make_create("/b/x", "text/plain", "bx")).code, errc::ok);
}

std::vector<std::byte> sample_part();

std::vector<std::byte> part_a(const state_machine& sm) {
  auto blob = sm.snapshot_part(in_a, [](const disk_location&) { return true; });
  EXPECT_TRUE(blob.has_value());
  return blob ? *blob : std::vector<std::byte>{};
}

std::vector<std::byte> sample_part() {
  state_machine x;
  sample(x);
  return part_a(x);
}

TEST(snapshot_relocate, a_stream_whose_first_records_are_only_in_objects_keeps_where_its_records_begin) {
  state_machine x;
  sample(x);
  // /a/s's first record (5 bytes, segment 4) is in an object now: the part says its records begin at 5.
  ASSERT_EQ(std::const_pointer_cast<memory_log>(x.log_of("/a/s"))->forget_before(stream_offset(5)), 5u);
  const auto blob = part_a(x);
  auto refs = snapshot_part_references(as_span(blob));
  ASSERT_TRUE(refs.has_value()) << refs.err().reason;
  EXPECT_EQ(*refs, (std::vector<part_reference>{{disk_location{5, 0, 0, 12}, 0, 5},
                                                {disk_location{4, 90, 0, 9}, 0, 2}}));
  auto moved =
      relocate_snapshot_part(as_span(blob), [](const part_reference& r) -> std::optional<part_reference> {
        part_reference to = r;
        to.at.segment += 100;
        return to;
      });
  ASSERT_TRUE(moved.has_value()) << moved.err().reason;
  state_machine y;
  auto st = y.restore_part(as_span(*moved), in_a);
  ASSERT_TRUE(st.has_value()) << st.err().reason;
  EXPECT_EQ(y.log_of("/a/s")->held_from().value(), 5u);
  EXPECT_EQ(y.log_of("/a/s")->tail().value(), 11u);
  auto back = snapshot_part_references(as_span(part_a(y)));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, (std::vector<part_reference>{{disk_location{105, 0, 0, 12}, 0, 5},
                                                {disk_location{104, 90, 0, 9}, 0, 2}}));
}

TEST(snapshot_relocate, references_lists_every_cold_record_in_order) {
  const auto blob = sample_part();
  auto refs = snapshot_part_references(as_span(blob));
  ASSERT_TRUE(refs.has_value()) << refs.err().reason;
  EXPECT_EQ(*refs, (std::vector<part_reference>{{disk_location{4, 40, 0, 9}, 0, 5},
                                                {disk_location{5, 0, 0, 12}, 0, 5},
                                                {disk_location{4, 90, 0, 9}, 0, 2}}));
  // An all-inline part has none.
  state_machine hot;
  ASSERT_EQ(create_at(hot, 1, make_create("/a/h", "text/plain", "hot")).code, errc::ok);
  auto none = snapshot_part_references(as_span(part_a(hot)));
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

TEST(snapshot_relocate, references_move_to_the_copies_and_nothing_else_changes) {
  const auto blob = sample_part();
  std::map<std::uint64_t, part_reference> copies;  // by the sender's offset
  copies[40] = part_reference{disk_location{7, 100, 0, 30}, 0, 5};
  copies[0] = part_reference{disk_location{7, 200, 0, 30}, 0, 5};
  copies[90] = part_reference{disk_location{8, 16, 0, 30}, 0, 2};
  auto moved = relocate_snapshot_part(
      as_span(blob),
      [&](const part_reference& r) -> std::optional<part_reference> { return copies.at(r.at.offset); });
  ASSERT_TRUE(moved.has_value()) << moved.err().reason;
  auto refs = snapshot_part_references(as_span(*moved));
  ASSERT_TRUE(refs.has_value());
  EXPECT_EQ(*refs, (std::vector<part_reference>{copies[40], copies[0], copies[90]}));

  // Restored elsewhere it reads the same streams, now from the copies' segments.
  state_machine y;
  ASSERT_TRUE(y.restore_part(as_span(*moved), in_a).has_value());
  EXPECT_EQ(y.referenced_segments(0), (std::vector<std::uint64_t>{7, 8}));
  auto rs = y.read("/a/s", std::nullopt, 1 << 20);
  ASSERT_EQ(rs.plan.slices.size(), 3u);
  EXPECT_TRUE(rs.plan.slices[0].cold());
  EXPECT_EQ(rs.plan.slices[0].at, (disk_location{7, 100, 0, 30}));
  EXPECT_EQ(std::string(rs.plan.slices[2].view()), "!");
  EXPECT_EQ(rs.plan.next.value(), 11u);

  // Relocating back gives the original bytes: only the references changed.
  auto back =
      relocate_snapshot_part(as_span(*moved), [&](const part_reference& r) -> std::optional<part_reference> {
        for (const auto& [offset, c] : copies) {
          if (c == r)
            return part_reference{offset == 0 ? disk_location{5, 0, 0, 12} : disk_location{4, offset, 0, 9},
                                  0, r.size};
        }
        return std::nullopt;
      });
  ASSERT_TRUE(back.has_value()) << back.err().reason;
  EXPECT_EQ(*back, blob);
}

TEST(snapshot_relocate, a_missing_or_resized_copy_fails) {
  const auto blob = sample_part();
  auto missing =
      relocate_snapshot_part(as_span(blob), [](const part_reference& r) -> std::optional<part_reference> {
        if (r.at.segment == 5) return std::nullopt;
        return part_reference{disk_location{9, r.at.offset, 0, 1}, 0, r.size};
      });
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.err().reason.find("/a/s"), std::string::npos) << missing.err().reason;
  auto resized =
      relocate_snapshot_part(as_span(blob), [](const part_reference& r) -> std::optional<part_reference> {
        return part_reference{disk_location{9, r.at.offset, 0, 1}, 0, r.size + 1};
      });
  EXPECT_FALSE(resized.has_value());
  auto nowhere =
      relocate_snapshot_part(as_span(blob), [](const part_reference& r) -> std::optional<part_reference> {
        return part_reference{disk_location{}, 0, r.size};
      });
  EXPECT_FALSE(nowhere.has_value());
  // A damaged blob is refused by both.
  auto damaged = blob;
  damaged.resize(damaged.size() / 2);
  EXPECT_FALSE(snapshot_part_references(as_span(damaged)).has_value());
  EXPECT_FALSE(relocate_snapshot_part(as_span(damaged), [](const part_reference& r) {
                 return std::optional(r);
               }).has_value());
}

}  // namespace
}  // namespace weir::streams
