// Restore snapshot objects: what is written reads back, and damage of any kind is an error, never state.
#include "tier/restore_snapshot.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "tier/object_format.h"

namespace weir::tier {
namespace {

object_bytes bytes_of(const std::string& s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return object_bytes(p, p + s.size());
}

restore_snapshot_header sample_header() {
  return restore_snapshot_header{cold_epoch{3}, cold_group{1}, 4, 987654321, 1'765'000'000'123};
}

TEST(restore_snapshot, round_trip) {
  const object_bytes state = bytes_of("a checkpoint's bytes");
  const object_bytes object = encode_restore_snapshot(sample_header(), state);
  ASSERT_EQ(object.size(), restore_snapshot_header_size + state.size());
  auto v = decode_restore_snapshot(object);
  ASSERT_TRUE(v) << v.err().reason;
  EXPECT_EQ(v->header.epoch, cold_epoch{3});
  EXPECT_EQ(v->header.group, cold_group{1});
  EXPECT_EQ(v->header.groups, 4u);
  EXPECT_EQ(v->header.lsn, 987654321u);
  EXPECT_EQ(v->header.taken_at_ms, 1'765'000'000'123);
  EXPECT_EQ(object_bytes(v->state.begin(), v->state.end()), state);
}

TEST(restore_snapshot, empty_state_is_valid) {
  auto v = decode_restore_snapshot(encode_restore_snapshot(sample_header(), {}));
  ASSERT_TRUE(v) << v.err().reason;
  EXPECT_TRUE(v->state.empty());
}

TEST(restore_snapshot, every_flipped_byte_is_refused) {
  const object_bytes object = encode_restore_snapshot(sample_header(), bytes_of("state bytes"));
  for (std::size_t i = 0; i < object.size(); ++i) {
    object_bytes bad = object;
    bad[i] ^= std::byte{0x20};
    EXPECT_FALSE(decode_restore_snapshot(bad)) << "byte " << i;
  }
}

TEST(restore_snapshot, truncated_and_impossible_headers_are_refused) {
  const object_bytes object = encode_restore_snapshot(sample_header(), bytes_of("state"));
  for (std::size_t n = 0; n < object.size(); ++n) {
    EXPECT_FALSE(decode_restore_snapshot(std::span(object).first(n))) << n << " bytes";
  }
  restore_snapshot_header h = sample_header();
  h.group = cold_group{4};  // not below groups
  EXPECT_FALSE(decode_restore_snapshot(encode_restore_snapshot(h, {})));
  h.groups = 0;
  h.group = cold_group{0};
  EXPECT_FALSE(decode_restore_snapshot(encode_restore_snapshot(h, {})));
}

// A state of 1,000 bytes in objects of at most 300: four parts of 300, 300, 300 and 100 and a head.
struct parted : ::testing::Test {
  object_bytes state = [] {
    object_bytes s;
    for (int i = 0; i < 1000; ++i) s.push_back(static_cast<std::byte>(i * 7 % 251));
    return s;
  }();
  restore_snapshot_objects objects = encode_restore_snapshot_objects(sample_header(), state, 300);

  std::function<result<object_bytes>(std::uint32_t)> parts_of(const restore_snapshot_objects& o) {
    return [&o](std::uint32_t i) -> result<object_bytes> {
      if (i >= o.parts.size())
        return make_error(object_format_errc::truncated, "no part " + std::to_string(i));
      return o.parts[i];
    };
  }
};

TEST(restore_snapshot, a_state_that_fits_is_one_object) {
  const object_bytes state = bytes_of("small");
  auto o = encode_restore_snapshot_objects(sample_header(), state, restore_snapshot_header_size + 5);
  EXPECT_TRUE(o.parts.empty());
  EXPECT_EQ(o.head, encode_restore_snapshot(sample_header(), state));
  EXPECT_EQ(o.bytes(), o.head.size());
  auto joined = join_restore_snapshot(o.head, [](std::uint32_t) -> result<object_bytes> {
    ADD_FAILURE() << "a whole snapshot has no parts to read";
    return object_bytes{};
  });
  ASSERT_TRUE(joined) << joined.err().reason;
  EXPECT_EQ(*joined, o.head);
}

TEST_F(parted, parts_are_slices_and_the_joined_snapshot_is_the_whole_one) {
  ASSERT_EQ(objects.parts.size(), 4u);
  EXPECT_EQ(objects.parts[0].size(), 300u);
  EXPECT_EQ(objects.parts[3].size(), 100u);
  for (const object_bytes& p : objects.parts) EXPECT_LE(p.size(), 300u);
  EXPECT_EQ(objects.bytes(), objects.head.size() + state.size());
  auto head = decode_restore_snapshot(objects.head);
  ASSERT_TRUE(head) << head.err().reason;
  EXPECT_TRUE(head->state.empty());
  ASSERT_EQ(head->parts.size(), 4u);
  EXPECT_EQ(head->parts[3].size, 100u);
  EXPECT_EQ(head->header.lsn, 987654321u);
  auto joined = join_restore_snapshot(objects.head, parts_of(objects));
  ASSERT_TRUE(joined) << joined.err().reason;
  EXPECT_EQ(*joined, encode_restore_snapshot(sample_header(), state));
}

TEST_F(parted, a_missing_damaged_or_foreign_part_is_refused) {
  restore_snapshot_objects o = objects;
  o.parts.pop_back();
  auto missing = join_restore_snapshot(o.head, parts_of(o));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.err().reason.find("no part 3"), std::string::npos) << missing.err().reason;
  for (std::size_t i = 0; i < objects.parts.size(); ++i) {
    o = objects;
    o.parts[i][17] ^= std::byte{1};
    auto damaged = join_restore_snapshot(o.head, parts_of(o));
    ASSERT_FALSE(damaged) << "part " << i;
    EXPECT_NE(damaged.err().reason.find("part " + std::to_string(i)), std::string::npos)
        << damaged.err().reason;
  }
  // Another snapshot's part of the same size.
  object_bytes other_state = state;
  other_state[5] ^= std::byte{1};
  const auto other = encode_restore_snapshot_objects(sample_header(), other_state, 300);
  o = objects;
  o.parts[0] = other.parts[0];
  EXPECT_FALSE(join_restore_snapshot(o.head, parts_of(o)));
  o = objects;
  o.parts[3].push_back(std::byte{0});
  EXPECT_FALSE(join_restore_snapshot(o.head, parts_of(o)));
}

TEST_F(parted, every_flipped_or_cut_byte_of_a_head_is_refused) {
  for (std::size_t i = 0; i < objects.head.size(); ++i) {
    object_bytes bad = objects.head;
    bad[i] ^= std::byte{0x20};
    EXPECT_FALSE(decode_restore_snapshot(bad)) << "byte " << i;
  }
  for (std::size_t n = 0; n < objects.head.size(); ++n) {
    EXPECT_FALSE(decode_restore_snapshot(std::span(objects.head).first(n))) << n << " bytes";
  }
}

}  // namespace
}  // namespace weir::tier
