// turn_budget: the bytes one loop turn may read, refilled by each new turn.
#include "http/turn_budget.h"

#include <gtest/gtest.h>

namespace weir::http {
namespace {

TEST(turn_budget, a_read_may_start_until_the_turn_spent_its_budget) {
  turn_budget b(100);
  EXPECT_TRUE(b.allows(1));
  b.charge(60);
  EXPECT_TRUE(b.allows(1));
  b.charge(60);  // a read that started within the budget is not cut short
  EXPECT_EQ(b.used(), 120u);
  EXPECT_FALSE(b.allows(1));
  EXPECT_FALSE(b.allows(1));
}

TEST(turn_budget, a_new_turn_refills_it) {
  turn_budget b(100);
  EXPECT_TRUE(b.allows(7));
  b.charge(100);
  EXPECT_FALSE(b.allows(7));
  EXPECT_TRUE(b.allows(8));
  EXPECT_EQ(b.used(), 0u);
}

TEST(turn_budget, zero_means_no_bound) {
  turn_budget b(0);
  b.charge(1ull << 40);
  EXPECT_TRUE(b.allows(1));
}

}  // namespace
}  // namespace weir::http
