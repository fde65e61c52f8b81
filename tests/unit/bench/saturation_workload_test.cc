// The saturation workload's ladder: which connection counts run, when it stops climbing, which step is
// the ceiling (the workload itself runs against real servers in bench/compare --saturation).
#include "bench/saturation_workload.h"

#include <gtest/gtest.h>

namespace weir::bench {
namespace {

TEST(saturation_workload, the_ladder_is_capped_at_one_writer_per_stream) {
  const std::vector<unsigned> ladder = {64, 256, 1024, 4096};
  EXPECT_EQ(ladder_for(ladder, 10'000), ladder);
  EXPECT_EQ(ladder_for(ladder, 1000), (std::vector<unsigned>{64, 256, 1000}));
  EXPECT_EQ(ladder_for(ladder, 100), (std::vector<unsigned>{64, 100}));
  EXPECT_EQ(ladder_for(ladder, 64), (std::vector<unsigned>{64}));
  EXPECT_EQ(ladder_for(ladder, 10), (std::vector<unsigned>{10}));
}

TEST(saturation_workload, climbing_stops_once_a_step_adds_no_more_than_the_plateau) {
  EXPECT_TRUE(still_climbing(40'000, 50'000, 0.05));
  EXPECT_FALSE(still_climbing(40'000, 42'000, 0.05));  // exactly 5%: no longer climbing
  EXPECT_FALSE(still_climbing(40'000, 30'000, 0.05));
  EXPECT_TRUE(still_climbing(no_value, 30'000, 0.05));   // nothing to compare with yet
  EXPECT_FALSE(still_climbing(40'000, no_value, 0.05));  // a step without a figure ends the ladder
}

TEST(saturation_workload, the_ceiling_is_the_step_with_the_most_appends) {
  std::vector<saturation_level> levels(3);
  levels[0].ops_s = 30'000;
  levels[1].ops_s = 52'000;
  levels[2].ops_s = 51'000;
  EXPECT_EQ(ceiling_of(levels), 1u);
  levels[0].ops_s = no_value;
  levels[1].ops_s = no_value;
  EXPECT_EQ(ceiling_of(levels), 2u);
  EXPECT_EQ(ceiling_of({}), 0u);
}

TEST(saturation_workload, cpu_per_append_and_memory_per_stream_come_from_the_window) {
  saturation_level l;
  l.ok = 100'000;
  l.server_cpu_s = 2.0;
  l.client.cpu_s = 0.5;
  l.client.wall_s = 10;
  EXPECT_DOUBLE_EQ(l.server_us_per_op(), 20.0);
  EXPECT_DOUBLE_EQ(l.client_us_per_op(), 5.0);
  saturation_result r;
  r.streams = 1024;
  r.rss_before_mib = 10;
  r.rss_streams_mib = 12;
  EXPECT_DOUBLE_EQ(r.kib_per_stream(), 2.0);
}

}  // namespace
}  // namespace weir::bench
