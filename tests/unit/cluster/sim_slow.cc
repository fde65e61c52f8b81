// The long run of the cluster simulation (label `slow`): thousands of seeds. WEIR_CLUSTER_SIM_SLOW_SEEDS
// sets how many (default 3000), WEIR_CLUSTER_SIM_SLOW_FIRST the first (default 100000, apart from the
// unit run's seeds); every fifth seed runs 5 nodes instead of 3, and every third takes group snapshots
// every 8 entries, and every fourth splits each node's groups over two lanes. A failure names its seed and
// the command that reruns it.
#include <cstdlib>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/log.h"
#include "cluster_sim.h"

namespace weir::cluster::sim {
namespace {

TEST(cluster_sim_slow, thousands_of_seeds) {
  std::uint64_t count = 3000;
  std::uint64_t first = 100000;
  if (const char* v = std::getenv("WEIR_CLUSTER_SIM_SLOW_SEEDS")) count = std::strtoull(v, nullptr, 10);
  if (const char* v = std::getenv("WEIR_CLUSTER_SIM_SLOW_FIRST")) first = std::strtoull(v, nullptr, 10);
  log::set_level("critical");  // not the torn tails every crash leaves, nor the injected disk errors
  std::uint64_t failed = 0;
  std::uint64_t acked = 0, reads = 0, crashes = 0, ran = 0;
  for (std::uint64_t seed = first; seed < first + count && failed < 5; ++seed) {
    sim_options o;
    o.seed = seed;
    o.nodes = seed % 5 == 0 ? 5 : 3;
    o.snapshot_threshold = seed % 3 == 0 ? 8 : 0;
    o.lanes = seed % 4 == 0 ? 2 : 1;
    const sim_report r = run_cluster_sim(o);
    ++ran;
    acked += r.acked;
    reads += r.reads;
    crashes += r.crashes + r.kills;
    if (!r.ok) {
      ++failed;
      ADD_FAILURE() << r.failure << "\n  reproduce: WEIR_CLUSTER_SIM_SEED=" << seed
                    << " WEIR_CLUSTER_SIM_NODES=" << o.nodes
                    << " WEIR_CLUSTER_SIM_SNAPSHOTS=" << o.snapshot_threshold
                    << " WEIR_CLUSTER_SIM_LANES=" << o.lanes
                    << " build/dev/tests/unit/cluster/cluster_sim_test --gtest_filter=cluster_sim.one_seed";
    }
  }
  fmt::print("{} seeds from {}: {} failed; {} appends acknowledged, {} reads served, {} crashes and kills\n",
             ran, first, failed, acked, reads, crashes);
  EXPECT_GT(acked, count * 100);
}

}  // namespace
}  // namespace weir::cluster::sim
