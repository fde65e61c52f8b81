// Restore snapshot objects: what is written reads back, and damage of any kind is an error, never state.
#include "tier/restore_snapshot.h"

#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace weir::tier
