// Object keys: one name per (epoch, group, term, sequence), parsed back, and listed in numeric order.
#include "tier/object_key.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace weir::tier {
namespace {

TEST(object_key, format_and_parse) {
  object_name n{cold_epoch{1}, cold_group{3}, leader_term{5}, upload_seq{18}};
  EXPECT_EQ(object_key(n), "e0001/g00000003/t0000000000000005-s0000000000000012.obj");
  EXPECT_EQ(parse_object_key(object_key(n)), n);
  object_name max{cold_epoch{0xffff}, cold_group{0xffffffff}, leader_term{~0ull}, upload_seq{~0ull}};
  EXPECT_EQ(parse_object_key(object_key(max)), max);
  EXPECT_EQ(group_key_prefix(cold_epoch{1}, cold_group{3}), "e0001/g00000003/");
  EXPECT_EQ(object_key(n).rfind(group_key_prefix(n.epoch, n.group), 0), 0u);
  EXPECT_EQ(object_key(n).rfind(epoch_key_prefix(n.epoch), 0), 0u);
}

TEST(object_key, foreign_keys_are_refused) {
  for (const char* k : {"", "e0001/", "e0001/g00000003/t0000000000000005-s0000000000000012",
                        "e0001/g00000003/t0000000000000005-s0000000000000012.obj.tmp",
                        "e0001/g0000000G/t0000000000000005-s0000000000000012.obj",
                        "E0001/g00000003/t0000000000000005-s0000000000000012.obj",
                        "e001/g00000003/t0000000000000005-s0000000000000012.obj", "other/thing.obj"}) {
    EXPECT_FALSE(parse_object_key(k)) << k;
  }
}

TEST(object_key, lexical_order_is_numeric_order) {
  std::vector<object_name> names;
  for (std::uint64_t term : {1ull, 2ull, 15ull, 16ull, 300ull}) {
    for (std::uint64_t seq : {0ull, 9ull, 10ull, 255ull, 4096ull}) {
      names.push_back({cold_epoch{2}, cold_group{7}, leader_term{term}, upload_seq{seq}});
    }
  }
  std::vector<std::string> keys;
  for (const auto& n : names) keys.push_back(object_key(n));
  std::sort(keys.begin(), keys.end());
  std::sort(names.begin(), names.end());
  for (std::size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(parse_object_key(keys[i]), names[i]);
}

TEST(object_key, restore_snapshot_keys_are_apart_from_objects) {
  object_name n{cold_epoch{2}, cold_group{3}, leader_term{5}, upload_seq{18}};
  EXPECT_EQ(snapshot_key(n), "e0002/snap/g00000003/t0000000000000005-s0000000000000012.snap");
  EXPECT_EQ(parse_snapshot_key(snapshot_key(n)), n);
  EXPECT_EQ(snapshot_key(n).rfind(snapshot_key_prefix(n.epoch), 0), 0u);
  EXPECT_EQ(snapshot_key_prefix(n.epoch, n.group), "e0002/snap/g00000003/");
  // Neither parser takes the other's keys, and an object listing of the group never sees a snapshot.
  EXPECT_FALSE(parse_object_key(snapshot_key(n)));
  EXPECT_FALSE(parse_snapshot_key(object_key(n)));
  EXPECT_NE(snapshot_key(n).rfind(group_key_prefix(n.epoch, n.group), 0), 0u);
  for (const char* k : {"e0002/snap/g00000003/t0000000000000005-s0000000000000012.obj",
                        "e0002/snap/g00000003/t0000000000000005-s0000000000000012.snap.tmp",
                        "e0002/snap/t0000000000000005-s0000000000000012.snap", "e0002/snap/"}) {
    EXPECT_FALSE(parse_snapshot_key(k)) << k;
  }
}

TEST(object_key, snapshot_parts_are_numbered_and_are_not_heads) {
  object_name n{cold_epoch{2}, cold_group{3}, leader_term{5}, upload_seq{18}};
  EXPECT_EQ(snapshot_part_key(n, 10),
            "e0002/snap/g00000003/t0000000000000005-s0000000000000012.part0000000a");
  EXPECT_EQ(parse_snapshot_part_key(snapshot_part_key(n, 10)), (snapshot_part_name{n, 10}));
  EXPECT_EQ(parse_snapshot_part_key(snapshot_part_key(n, 0xffffffffu)), (snapshot_part_name{n, 0xffffffffu}));
  EXPECT_LT(snapshot_part_key(n, 9), snapshot_part_key(n, 10));
  // A part is neither a snapshot nor an object, and a head is not a part.
  EXPECT_FALSE(parse_snapshot_key(snapshot_part_key(n, 0)));
  EXPECT_FALSE(parse_object_key(snapshot_part_key(n, 0)));
  EXPECT_FALSE(parse_snapshot_part_key(snapshot_key(n)));
  EXPECT_FALSE(parse_snapshot_part_key(object_key(n)));
  for (const char* k : {"e0002/snap/g00000003/t0000000000000005-s0000000000000012.part0000000",
                        "e0002/snap/g00000003/t0000000000000005-s0000000000000012.part0000000A",
                        "e0002/snap/g00000003/t0000000000000005-s0000000000000012.part000000000",
                        "e0002/snap/g00000003/t0000000000000005-s0000000000000012.part"}) {
    EXPECT_FALSE(parse_snapshot_part_key(k)) << k;
  }
}

}  // namespace
}  // namespace weir::tier
