// detail::trailing_entries (replicator_group.h): how many entries libraft keeps below a snapshot.
#include <gtest/gtest.h>

#include "cluster/replicator_group.h"

namespace weir::cluster {
namespace {

using detail::trailing_entries;

TEST(cluster_trailing, small_entries_keep_the_setting) {
  const std::deque<std::uint32_t> recent(200, 100);  // 200 entries of 100 bytes
  EXPECT_EQ(trailing_entries(recent, 128, 1u << 20), 128u);
}

TEST(cluster_trailing, large_entries_keep_only_what_fits_in_the_budget) {
  std::deque<std::uint32_t> recent(128, 512u << 10);  // 512 KiB appends
  EXPECT_EQ(trailing_entries(recent, 128, 1u << 20), 2u);
  // Mixed: the newest entries count first.
  recent.push_back(100);
  recent.push_back(100);
  EXPECT_EQ(trailing_entries(recent, 128, 1u << 20), 3u);
}

TEST(cluster_trailing, at_least_one_entry_is_kept) {
  const std::deque<std::uint32_t> recent(10, 8u << 20);
  EXPECT_EQ(trailing_entries(recent, 128, 1u << 20), 1u);
}

TEST(cluster_trailing, few_known_entries_within_budget_keep_the_setting) {
  const std::deque<std::uint32_t> recent(5, 1000);
  EXPECT_EQ(trailing_entries(recent, 128, 1u << 20), 128u);
  EXPECT_EQ(trailing_entries({}, 128, 1u << 20), 128u);
  // But not when those few already exceed it.
  const std::deque<std::uint32_t> big(5, 600u << 10);
  EXPECT_EQ(trailing_entries(big, 128, 1u << 20), 1u);
}

TEST(cluster_trailing, zero_trailing_stays_zero) {
  const std::deque<std::uint32_t> recent(5, 1000);
  EXPECT_EQ(trailing_entries(recent, 0, 1u << 20), 0u);
}

}  // namespace
}  // namespace weir::cluster
