// The lane simulation (lane_sim.h) over thousands of seeds: label slow. WEIR_LANE_SIM_SLOW_SEEDS sets
// how many (default 3000), WEIR_LANE_SIM_SLOW_FIRST the first (default 100000, apart from the unit run's
// seeds); every fourth seed splits each node's groups over two lanes, every fifth runs 5 nodes, every
// tenth snapshots every 6 entries instead of 12, every twentieth runs the lost fork releases phase, and
// every third runs the cold tier (lane_sim.h, invariant 8; with faults of the bucket every ninth; without
// forks when it has two lanes). A failure names its seed and the command that reruns it.
#include <cstdlib>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/log.h"
#include "unit/cluster/lane_sim.h"

namespace weir::cluster::sim {
namespace {

TEST(lane_sim_slow, thousands_of_seeds) {
  std::uint64_t count = 3000;
  std::uint64_t first = 100000;
  if (const char* v = std::getenv("WEIR_LANE_SIM_SLOW_SEEDS")) count = std::strtoull(v, nullptr, 10);
  if (const char* v = std::getenv("WEIR_LANE_SIM_SLOW_FIRST")) first = std::strtoull(v, nullptr, 10);
  log::set_level("critical");
  std::uint64_t failed = 0, acked = 0, reads = 0, crashes = 0, ran = 0;
  std::uint64_t cold_runs = 0, cold_puts = 0, cold_extents = 0, cold_forgotten = 0, object_reads = 0;
  for (std::uint64_t seed = first; seed < first + count && failed < 5; ++seed) {
    lane_sim_options o;
    o.seed = seed;
    o.lanes = seed % 4 == 0 ? 2 : 1;
    o.nodes = seed % 5 == 0 ? 5 : 3;
    o.snapshot_entries = seed % 10 == 0 ? 6 : 12;
    o.lose_releases = seed % 20 == 0;
    o.cold = seed % 3 == 0;
    o.cold_store_faults = o.cold && seed % 9 == 0 ? 0.05 : 0;
    const lane_sim_report r = run_lane_sim(o);
    ++ran;
    acked += r.acked;
    reads += r.reads;
    crashes += r.crashes + r.kills;
    cold_runs += o.cold ? 1 : 0;
    cold_puts += r.cold_puts;
    cold_extents += r.cold_extents;
    cold_forgotten += r.cold_forgotten;
    object_reads += r.object_reads;
    if (!r.ok) {
      ++failed;
      ADD_FAILURE() << r.failure << "\n  replay: WEIR_LANE_SIM_SEED=" << seed
                    << " WEIR_LANE_SIM_LANES=" << o.lanes << " WEIR_LANE_SIM_NODES=" << o.nodes
                    << " WEIR_LANE_SIM_SNAPSHOT_ENTRIES=" << o.snapshot_entries
                    << " WEIR_LANE_SIM_RELEASES=" << (o.lose_releases ? 1 : 0)
                    << " WEIR_LANE_SIM_COLD=" << (o.cold ? 1 : 0) << " WEIR_LANE_SIM_FORKS=" << o.forks
                    << " WEIR_LANE_SIM_STORE_FAULTS=" << (o.cold_store_faults > 0 ? 1 : 0)
                    << " build/dev/tests/unit/cluster/cluster_lane_sim --gtest_filter=lane_sim.one_seed";
    }
  }
  fmt::print(
      "{} seeds from {}: {} failed; {} appends acknowledged, {} reads served, {} crashes and kills; {} with "
      "the "
      "cold tier: {} objects put, {} extents at the end, {} bytes forgotten, {} reads from the bucket\n",
      ran, first, failed, acked, reads, crashes, cold_runs, cold_puts, cold_extents, cold_forgotten,
      object_reads);
  EXPECT_GT(acked, count * 40);
  if (cold_runs > 0) {
    EXPECT_GT(cold_puts, cold_runs);
    EXPECT_GT(cold_extents, cold_runs);
    EXPECT_GT(cold_forgotten, cold_runs * 1000);
    EXPECT_GT(object_reads, cold_runs);
  }
}

}  // namespace
}  // namespace weir::cluster::sim
