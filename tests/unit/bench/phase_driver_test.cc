#include "bench/phase_driver.h"

#include <cmath>

#include <gtest/gtest.h>

namespace weir::bench {
namespace {

TEST(phase_driver, durations_for_the_progress_line) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(-5), "0s");  // an estimate that ran over says nothing is left
  EXPECT_EQ(format_duration(44.6), "45s");
  EXPECT_EQ(format_duration(60), "1m00s");
  EXPECT_EQ(format_duration(12 * 60 + 5), "12m05s");
  EXPECT_EQ(format_duration(3600 + 125), "1h02m");
}

TEST(phase_driver, client_cpu_share_is_cpu_over_wall_time) {
  EXPECT_DOUBLE_EQ((phase_cpu{2.0, 1.0}).share(), 0.5);
  EXPECT_TRUE(std::isnan((phase_cpu{0.0, 1.0}).share()));
  workload_tally t;
  t.cpu = {10.0, 9.5};
  EXPECT_TRUE(t.saturated());
  t.threads = 2;  // 95% of one core is below 90% of two
  EXPECT_FALSE(t.saturated());
  t.cpu = {10.0, 8.9};
  t.threads = 1;
  EXPECT_FALSE(t.saturated());
}

}  // namespace
}  // namespace weir::bench
