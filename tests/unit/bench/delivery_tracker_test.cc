#include "bench/delivery_tracker.h"

#include <gtest/gtest.h>

namespace weir::bench {
namespace {

using verdict = delivery_tracker::verdict;

TEST(delivery_tracker, every_event_once_to_every_reader_is_nothing_lost_or_duplicated) {
  delivery_tracker t(3, 4);
  EXPECT_EQ(t.expected(), 12u);
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(t.record(r, k), verdict::fresh);
  }
  EXPECT_EQ(t.delivered(), 12u);
  EXPECT_EQ(t.lost(), 0u);
  EXPECT_EQ(t.duplicated(), 0u);
  for (std::size_t r = 0; r < 3; ++r) EXPECT_TRUE(t.complete(r));
}

TEST(delivery_tracker, a_second_delivery_is_a_duplicate_and_does_not_hide_a_loss) {
  delivery_tracker t(2, 3);
  EXPECT_EQ(t.record(0, 0), verdict::fresh);
  EXPECT_EQ(t.record(0, 0), verdict::duplicate);  // the same event again instead of event 1
  EXPECT_EQ(t.record(0, 2), verdict::fresh);
  EXPECT_EQ(t.record(1, 1), verdict::fresh);
  EXPECT_EQ(t.duplicated(), 1u);
  EXPECT_EQ(t.delivered(), 3u);
  EXPECT_EQ(t.lost(), 3u);  // reader 0 misses 1, reader 1 misses 0 and 2
  EXPECT_EQ(t.received(0), 2u);
  EXPECT_FALSE(t.complete(0));
  EXPECT_EQ(t.lost_of_sent(0, 3), 1u);
  EXPECT_EQ(t.lost_of_sent(1, 1), 1u);  // of the first event sent, reader 1 lacks it
  EXPECT_EQ(t.lost_of_sent(1, 0), 0u);
}

TEST(delivery_tracker, events_beyond_the_count_are_out_of_range_not_deliveries) {
  delivery_tracker t(1, 2);
  EXPECT_EQ(t.record(0, 2), verdict::out_of_range);
  EXPECT_EQ(t.record(0, 1000), verdict::out_of_range);
  EXPECT_EQ(t.out_of_range(), 2u);
  EXPECT_EQ(t.delivered(), 0u);
  EXPECT_EQ(t.lost(), 2u);
}

TEST(delivery_tracker, a_reader_that_gets_nothing_loses_everything) {
  delivery_tracker t(1000, 50);
  for (std::size_t r = 1; r < 1000; ++r) {
    for (std::size_t k = 0; k < 50; ++k) t.record(r, k);
  }
  EXPECT_EQ(t.lost(), 50u);
  EXPECT_EQ(t.received(0), 0u);
  EXPECT_TRUE(t.complete(999));
}

}  // namespace
}  // namespace weir::bench
