// The production partition and raft lane under the deterministic simulation (lane_sim.h): a few hundred
// seeds of 3 nodes with faults; thousands under the `slow` label (lane_sim_slow.cc). A failing seed
// replays with WEIR_LANE_SIM_SEED=<seed> and prints its trace.
#include <gtest/gtest.h>

#include <cstdlib>

#include "base/log.h"

#include "unit/cluster/lane_sim.h"

namespace weir::cluster::sim {
namespace {

TEST(lane_sim, without_faults_every_append_is_acknowledged_and_read_back_alike) {
  log::set_level("critical");
  lane_sim_options o;
  o.faults = false;
  const lane_sim_report r = run_lane_sim(o);
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.acked, static_cast<std::uint64_t>(o.clients * o.appends_per_client));
  EXPECT_GT(r.evicted, 0u);  // reads came back from the data log
  EXPECT_GT(r.data_syncs, 0u);
  EXPECT_GT(r.snapshots, 0u);  // snapshots referenced the data log's records
}

TEST(lane_sim, seeds_with_faults) {
  log::set_level("critical");  // not the torn tails and elections (one_seed shows them)
  std::uint64_t acked = 0, crashes = 0, kills = 0, evicted = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    lane_sim_options o;
    o.seed = seed;
    o.lanes = seed % 4 == 0 ? 2 : 1;  // a quarter of the runs with two lanes per node
    const lane_sim_report r = run_lane_sim(o);
    ASSERT_TRUE(r.ok) << r.failure << "\nreplay: WEIR_LANE_SIM_SEED=" << seed
                      << " build/dev/tests/unit/cluster/cluster_lane_sim --gtest_filter=lane_sim.one_seed";
    acked += r.acked;
    crashes += r.crashes;
    kills += r.kills;
    evicted += r.evicted;
  }
  // The runs did what they are for: writes went through, nodes went down, records left memory.
  EXPECT_GT(acked, 1000u);
  EXPECT_GT(crashes, 20u);
  EXPECT_GT(kills, 20u);
  EXPECT_GT(evicted, 1000u);
}

// One seed with its trace (WEIR_LANE_SIM_SEED; seed 1 without it).
TEST(lane_sim, one_seed) {
  lane_sim_options o;
  if (const char* s = std::getenv("WEIR_LANE_SIM_SEED")) {
    o.seed = std::strtoull(s, nullptr, 10);
    o.verbose = true;
  }
  o.lanes = o.seed % 4 == 0 ? 2 : 1;  // as seeds_with_faults and the slow run choose
  const lane_sim_report r = run_lane_sim(o);
  EXPECT_TRUE(r.ok) << r.failure;
}

}  // namespace
}  // namespace weir::cluster::sim
