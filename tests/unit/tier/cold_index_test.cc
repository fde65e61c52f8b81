// cold_index: records applied in order build contiguous extents per stream; stale, overlapping, gapped
// and too-long ranges are skipped or refused the same way on every replica; forks start at their base;
// dropping streams frees objects once nothing names them; snapshots round-trip, and damaged ones are
// errors.
#include "tier/cold_index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace weir::tier {
namespace {

using streams::stream_offset;

// Streams known to the replica: base and tail.
struct replica_streams {
  std::map<std::string, cold_index::stream_span, std::less<>> known;
  cold_index::span_fn fn() {
    return [this](std::string_view s) -> std::optional<cold_index::stream_span> {
      auto it = known.find(s);
      if (it == known.end()) return std::nullopt;
      return it->second;
    };
  }
};

uploaded_object object(std::uint64_t seq,
                       std::vector<std::tuple<std::string, std::uint64_t, std::uint64_t>> ranges) {
  uploaded_object u;
  u.name = object_name{cold_epoch(1), cold_group(0), leader_term(1), upload_seq(seq)};
  u.key = object_key(u.name);
  std::uint64_t pos = 0;
  for (auto& [stream, first, end] : ranges) {
    u.ranges.push_back(object_range{stream, stream_offset(first), stream_offset(end), pos, end - first});
    pos += end - first;
  }
  u.size = pos + 100;
  return u;
}

TEST(cold_index, records_in_order_make_contiguous_extents_found_by_offset) {
  replica_streams rs;
  rs.known["/a"] = {stream_offset(0), stream_offset(5000)};
  rs.known["/b"] = {stream_offset(0), stream_offset(5000)};
  cold_index ix;
  auto r1 = ix.apply(object(0, {{"/a", 0, 1000}, {"/b", 0, 300}}), rs.fn());
  EXPECT_EQ(r1.applied, 2u);
  EXPECT_TRUE(r1.recorded);
  auto r2 = ix.apply(object(1, {{"/a", 1000, 2500}}), rs.fn());
  EXPECT_EQ(r2.applied, 1u);
  EXPECT_EQ(ix.cold_end("/a"), stream_offset(2500));
  EXPECT_EQ(ix.cold_end("/b"), stream_offset(300));
  EXPECT_EQ(ix.cold_end("/c"), std::nullopt);
  auto at = ix.find("/a", stream_offset(1700));
  ASSERT_TRUE(at);
  EXPECT_EQ(at->extent->first, stream_offset(1000));
  EXPECT_EQ(at->extent->data_position, 0u);
  EXPECT_EQ(at->object->key, object(1, {}).key);
  EXPECT_EQ(ix.find("/a", stream_offset(2500)), std::nullopt);  // past the cold end: local
  EXPECT_EQ(ix.find("/b", stream_offset(299))->object->key, object(0, {}).key);
  EXPECT_EQ(ix.objects(), 2u);
  EXPECT_EQ(ix.extents(), 3u);
}

TEST(cold_index, stale_overlapping_gapped_and_undurable_ranges_change_nothing) {
  replica_streams rs;
  rs.known["/a"] = {stream_offset(0), stream_offset(3000)};
  cold_index ix;
  ASSERT_EQ(ix.apply(object(0, {{"/a", 0, 1000}}), rs.fn()).applied, 1u);
  const auto before = ix.encode();
  // The same record again (a retry), and a deposed leader's late record over the same bytes.
  EXPECT_EQ(ix.apply(object(0, {{"/a", 0, 1000}}), rs.fn()).skipped, 1u);
  EXPECT_EQ(ix.apply(object(9, {{"/a", 0, 800}}), rs.fn()).skipped, 1u);
  auto overlap = ix.apply(object(10, {{"/a", 500, 1500}}), rs.fn());
  auto gap = ix.apply(object(11, {{"/a", 1200, 1500}}), rs.fn());
  auto undurable = ix.apply(object(12, {{"/a", 1000, 3500}}), rs.fn());
  EXPECT_EQ(overlap.refused + gap.refused + undurable.refused, 3u);
  EXPECT_FALSE(overlap.recorded || gap.recorded || undurable.recorded);
  auto gone = ix.apply(object(13, {{"/deleted", 0, 10}}), rs.fn());
  EXPECT_EQ(gone.skipped, 1u);
  EXPECT_FALSE(gone.recorded);  // an object no range of which applies is not recorded: an orphan
  EXPECT_EQ(ix.encode(), before);
}

TEST(cold_index, a_fork_starts_at_its_fork_point) {
  replica_streams rs;
  rs.known["/fork"] = {stream_offset(4000), stream_offset(6000)};
  cold_index ix;
  EXPECT_EQ(ix.apply(object(0, {{"/fork", 0, 1000}}), rs.fn()).skipped, 1u);  // the source's bytes
  EXPECT_EQ(ix.apply(object(1, {{"/fork", 4500, 5000}}), rs.fn()).refused, 1u);
  EXPECT_EQ(ix.apply(object(2, {{"/fork", 4000, 5000}}), rs.fn()).applied, 1u);
  EXPECT_EQ(ix.cold_end("/fork"), stream_offset(5000));
}

TEST(cold_index, dropping_streams_frees_an_object_once_nothing_names_it) {
  replica_streams rs;
  rs.known["/a"] = {stream_offset(0), stream_offset(9000)};
  rs.known["/b"] = {stream_offset(0), stream_offset(9000)};
  cold_index ix;
  ix.apply(object(0, {{"/a", 0, 100}, {"/b", 0, 100}}), rs.fn());
  ix.apply(object(1, {{"/a", 100, 200}}), rs.fn());
  auto freed = ix.drop_stream("/a");
  ASSERT_EQ(freed.size(), 1u);
  EXPECT_EQ(freed[0].key, object(1, {}).key);  // object 0 still holds /b
  EXPECT_EQ(ix.objects(), 1u);
  freed = ix.drop_stream("/b");
  ASSERT_EQ(freed.size(), 1u);
  EXPECT_EQ(freed[0].key, object(0, {}).key);
  EXPECT_EQ(ix.objects(), 0u);
  EXPECT_EQ(ix.extents(), 0u);
  EXPECT_TRUE(ix.drop_stream("/b").empty());
  // A freed slot is reused.
  ix.apply(object(2, {{"/a2", 0, 0}}), rs.fn());
  rs.known["/c"] = {stream_offset(0), stream_offset(10)};
  EXPECT_TRUE(ix.apply(object(3, {{"/c", 0, 10}}), rs.fn()).recorded);
  EXPECT_EQ(ix.objects(), 1u);
}

TEST(cold_index, names_the_keys_its_extents_name_after_drops_and_a_snapshot_round_trip) {
  replica_streams rs;
  rs.known["/a"] = {stream_offset(0), stream_offset(9000)};
  rs.known["/b"] = {stream_offset(0), stream_offset(9000)};
  cold_index ix;
  ix.apply(object(0, {{"/a", 0, 100}, {"/b", 0, 100}}), rs.fn());
  ix.apply(object(1, {{"/a", 100, 200}}), rs.fn());
  EXPECT_TRUE(ix.names(object(0, {}).key));
  EXPECT_TRUE(ix.names(object(1, {}).key));
  EXPECT_FALSE(ix.names(object(2, {}).key));
  (void)ix.drop_stream("/a");
  EXPECT_TRUE(ix.names(object(0, {}).key));  // /b still reads from it
  EXPECT_FALSE(ix.names(object(1, {}).key));
  auto back = cold_index::decode(ix.encode());
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->names(object(0, {}).key));
  EXPECT_FALSE(back->names(object(1, {}).key));
  (void)back->drop_stream("/b");
  EXPECT_FALSE(back->names(object(0, {}).key));
}

TEST(cold_index, memory_follows_objects_not_records) {
  replica_streams rs;
  rs.known["/a"] = {stream_offset(0), stream_offset(10'000'000)};
  cold_index ix;
  // 10 objects of 1 MB each hold (say) 10,000 records of 1 KB: 10 extents, not 10,000.
  for (std::uint64_t i = 0; i < 10; ++i)
    ix.apply(object(i, {{"/a", i * 1'000'000, (i + 1) * 1'000'000}}), rs.fn());
  EXPECT_EQ(ix.extents(), 10u);
  EXPECT_LT(ix.encode().size(), 2000u);
}

TEST(cold_index, a_groups_part_carries_its_streams_and_its_restore_replaces_only_them) {
  replica_streams rs;
  for (const char* s : {"/g1/a", "/g1/b", "/g2/c"}) rs.known[s] = {stream_offset(0), stream_offset(9000)};
  cold_index ix;
  ASSERT_TRUE(ix.apply(object(0, {{"/g1/a", 0, 100}, {"/g1/b", 0, 50}}), rs.fn()).recorded);
  ASSERT_TRUE(ix.apply(object(1, {{"/g2/c", 0, 70}}), rs.fn()).recorded);
  ASSERT_TRUE(ix.apply(object(2, {{"/g1/a", 100, 400}}), rs.fn()).recorded);
  auto g1 = [](std::string_view s) { return s.starts_with("/g1/"); };
  const cold_index part = ix.part(g1);
  EXPECT_EQ(part.streams(), 2u);
  EXPECT_EQ(part.objects(), 2u);
  EXPECT_EQ(part.extents(), 3u);
  EXPECT_EQ(part.cold_end("/g1/a"), stream_offset(400));
  EXPECT_EQ(part.cold_end("/g2/c"), std::nullopt);
  // Equal parts encode equally, whatever the order their streams were added in.
  auto round = cold_index::decode(part.encode());
  ASSERT_TRUE(round);
  EXPECT_EQ(*round, part);

  // A replica whose group 1 is behind (or ahead, or holds a stream the snapshot no longer has) takes the
  // part as it is; group 2 is untouched.
  cold_index other;
  rs.known["/g1/gone"] = {stream_offset(0), stream_offset(9000)};
  ASSERT_TRUE(other.apply(object(0, {{"/g1/a", 0, 100}, {"/g1/gone", 0, 10}}), rs.fn()).recorded);
  ASSERT_TRUE(other.apply(object(1, {{"/g2/c", 0, 70}}), rs.fn()).recorded);
  other.replace_part(g1, *round);
  EXPECT_EQ(other.cold_end("/g1/a"), stream_offset(400));
  EXPECT_EQ(other.cold_end("/g1/b"), stream_offset(50));
  EXPECT_EQ(other.cold_end("/g1/gone"), std::nullopt);
  EXPECT_EQ(other.cold_end("/g2/c"), stream_offset(70));
  EXPECT_EQ(other.part(g1), part);
  EXPECT_TRUE(other.names(object(0, {}).key));
  EXPECT_TRUE(other.names(object(2, {}).key));
  auto at = other.find("/g1/a", stream_offset(250));
  ASSERT_TRUE(at);
  EXPECT_EQ(at->object->key, object(2, {}).key);
  EXPECT_EQ(at->extent->data_position, 0u);
  // The streams of the part in a whole index's encoding survive a round trip.
  auto whole = cold_index::decode(other.encode());
  ASSERT_TRUE(whole);
  EXPECT_EQ(*whole, other);
  // A part never reaches outside its group.
  cold_index third;
  third.replace_part([](std::string_view s) { return s.starts_with("/g2/"); }, *round);
  EXPECT_EQ(third.streams(), 0u);
  EXPECT_EQ(third.objects(), 0u);
}

TEST(cold_index, snapshots_round_trip_and_damaged_ones_are_errors) {
  replica_streams rs;
  for (int s = 0; s < 5; ++s) rs.known["/s" + std::to_string(s)] = {stream_offset(0), stream_offset(100'000)};
  cold_index ix;
  std::map<std::string, std::uint64_t> ends;
  for (std::uint64_t i = 0; i < 20; ++i) {
    std::vector<std::tuple<std::string, std::uint64_t, std::uint64_t>> ranges;
    for (int s = 0; s < 5; ++s) {
      if ((i + s) % 3 == 0) continue;
      const std::string name = "/s" + std::to_string(s);
      ranges.emplace_back(name, ends[name], ends[name] + 100 + i);
      ends[name] += 100 + i;
    }
    ix.apply(object(i, ranges), rs.fn());
  }
  ix.drop_stream("/s2");  // leaves free slots
  const auto bytes = ix.encode();
  auto back = cold_index::decode(bytes);
  ASSERT_TRUE(back) << back.err().reason;
  EXPECT_TRUE(*back == ix);
  EXPECT_EQ(back->objects(), ix.objects());
  EXPECT_EQ(back->extents(), ix.extents());
  // Every prefix and a few thousand single-byte flips: an error or an index, never a crash.
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(cold_index::decode(std::span(bytes).first(n))) << n;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3000; ++i) {
    auto damaged = bytes;
    damaged[rng() % damaged.size()] ^= std::byte(static_cast<std::uint8_t>(1 + rng() % 255));
    auto d = cold_index::decode(damaged);
    if (d) {
      EXPECT_EQ(d->encode().size(), damaged.size());
    }
  }
}

TEST(cold_index, an_index_record_round_trips_and_damaged_ones_are_errors) {
  const uploaded_object u = object(12, {{"/a", 0, 1000}, {"/b/c", 500, 700}});
  const auto bytes = encode_index_record(u);
  auto back = decode_index_record(bytes);
  ASSERT_TRUE(back) << back.err().reason;
  EXPECT_EQ(back->key, u.key);
  EXPECT_EQ(back->name, u.name);
  EXPECT_EQ(back->size, u.size);
  EXPECT_EQ(back->ranges, u.ranges);
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(decode_index_record(std::span(bytes).first(n))) << n;
  // A range past the object's size, and ranges out of order, are refused.
  uploaded_object past = u;
  past.size = 900;
  EXPECT_FALSE(decode_index_record(encode_index_record(past)));
  uploaded_object reversed = u;
  std::swap(reversed.ranges[0], reversed.ranges[1]);
  EXPECT_FALSE(decode_index_record(encode_index_record(reversed)));
  std::mt19937_64 rng(11);
  for (int i = 0; i < 3000; ++i) {
    auto damaged = bytes;
    damaged[rng() % damaged.size()] ^= std::byte(static_cast<std::uint8_t>(1 + rng() % 255));
    if (auto d = decode_index_record(damaged)) {
      EXPECT_EQ(encode_index_record(*d), damaged);
    }
  }
}

}  // namespace
}  // namespace weir::tier
