#include "cluster/entry_places.h"

#include <gtest/gtest.h>

namespace weir::cluster {
namespace {

raft::entry_place at(std::uint32_t segment, std::uint64_t offset) {
  return raft::entry_place{segment, offset, 17};
}

TEST(entry_places, an_applied_entry_takes_its_place_and_forgets_those_below) {
  entry_places p;
  for (std::uint64_t i = 5; i <= 8; ++i) p.placed(i, at(1, i * 100), 4);
  auto six = p.take(6);
  ASSERT_TRUE(six);
  EXPECT_EQ(*six, at(1, 600));
  EXPECT_EQ(p.size(), 2u);  // 5 was passed over (applied from a snapshot, say), 6 taken
  EXPECT_FALSE(p.take(6));
  EXPECT_EQ(*p.take(7), at(1, 700));
  EXPECT_FALSE(p.take(10));  // beyond every place: none, and 8 is gone with it
  EXPECT_EQ(p.size(), 0u);
}

TEST(entry_places, a_rewritten_index_drops_the_places_from_it_on) {
  entry_places p;
  for (std::uint64_t i = 1; i <= 5; ++i) p.placed(i, at(1, i), 0);
  p.placed(3, at(2, 30), 0);  // a truncate at 3, then a new entry 3 (4 and 5 are not rewritten yet)
  EXPECT_EQ(*p.take(3), at(2, 30));
  EXPECT_FALSE(p.take(4));  // its old place is never handed out
}

TEST(entry_places, reports_of_applied_entries_and_of_the_version_1_file_are_ignored) {
  entry_places p;
  p.placed(3, at(1, 3), 2);
  p.placed(4, at(1, 4), 2);
  p.placed(2, at(3, 2), 2);  // carried forward after its apply
  p.placed(5, at(0, 5), 2);  // segment 0 gives no place
  EXPECT_EQ(*p.take(3), at(1, 3));
  EXPECT_EQ(*p.take(4), at(1, 4));
  EXPECT_FALSE(p.take(5));
}

}  // namespace
}  // namespace weir::cluster
