// The lane simulation (lane_sim.h) over thousands of seeds: label slow.
#include <gtest/gtest.h>

#include "base/log.h"
#include "unit/cluster/lane_sim.h"

namespace weir::cluster::sim {
namespace {

TEST(lane_sim_slow, thousands_of_seeds) {
  log::set_level("critical");
  for (std::uint64_t seed = 1000; seed < 4000; ++seed) {
    lane_sim_options o;
    o.seed = seed;
    o.lanes = seed % 4 == 0 ? 2 : 1;
    const lane_sim_report r = run_lane_sim(o);
    ASSERT_TRUE(r.ok) << r.failure << "\nreplay: WEIR_LANE_SIM_SEED=" << seed
                      << " build/dev/tests/unit/cluster/cluster_lane_sim --gtest_filter=lane_sim.one_seed";
  }
}

}  // namespace
}  // namespace weir::cluster::sim
