// The long run of the cluster simulation (label `slow`): thousands of seeds. WEIR_RAFT_SIM_SLOW_SEEDS
// sets how many (default 3000), WEIR_RAFT_SIM_SLOW_FIRST the first (default 100000, apart from the unit
// run's seeds); every third seed runs with libraft snapshots on. A failure names its seed.
#include <cstdlib>

#include <gtest/gtest.h>

#include "cluster_sim.h"

namespace weir::raft::sim {
namespace {

TEST(raft_cluster_sim_slow, thousands_of_seeds) {
  std::uint64_t count = 3000;
  std::uint64_t first = 100000;
  if (const char* v = std::getenv("WEIR_RAFT_SIM_SLOW_SEEDS")) count = std::strtoull(v, nullptr, 10);
  if (const char* v = std::getenv("WEIR_RAFT_SIM_SLOW_FIRST")) first = std::strtoull(v, nullptr, 10);
  std::uint64_t failed = 0;
  std::uint64_t acked = 0;
  for (std::uint64_t seed = first; seed < first + count && failed < 5; ++seed) {
    sim_options o;
    o.seed = seed;
    o.snapshot_threshold = seed % 3 == 0 ? 16 : 0;
    const sim_report r = run_cluster_sim(o);
    acked += r.acked;
    if (!r.ok) {
      ++failed;
      ADD_FAILURE()
          << r.failure << "\n  reproduce: WEIR_RAFT_SIM_SEED=" << seed
          << " WEIR_RAFT_SIM_SNAPSHOTS=" << o.snapshot_threshold
          << " build/dev/tests/unit/raft/raft_cluster_sim_test --gtest_filter=raft_cluster_sim.one_seed";
    }
  }
  EXPECT_GT(acked, count * 100);
}

}  // namespace
}  // namespace weir::raft::sim
