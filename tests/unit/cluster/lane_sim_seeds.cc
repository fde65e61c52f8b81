// The production partition and raft lane under the deterministic simulation (lane_sim.h): a few hundred
// seeds of 3 nodes with faults in the unit run; thousands under the `slow` label (lane_sim_slow.cc). A
// failing seed replays alone with its trace: WEIR_LANE_SIM_SEED=<seed> (and the options it names)
// cluster_lane_sim --gtest_filter=lane_sim.one_seed.
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/log.h"
#include "unit/cluster/lane_sim.h"

namespace weir::cluster::sim {
namespace {

std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

// The chance of a retryable fault per call of the bucket, in the cold runs that meet them.
constexpr double cold_store_faults = 0.05;

// A cold run: one lane or two (forks on another lane than their source included), a third of the runs
// with faults of the bucket.
lane_sim_options cold_options(std::uint64_t seed) {
  lane_sim_options o;
  o.seed = seed;
  o.cold = true;
  o.lanes = seed % 4 == 0 ? 2 : 1;
  o.cold_store_faults = seed % 3 == 0 ? cold_store_faults : 0;
  return o;
}

std::string replay(const lane_sim_options& o) {
  return fmt::format(
      "\n  replay: WEIR_LANE_SIM_SEED={} WEIR_LANE_SIM_LANES={} WEIR_LANE_SIM_RELEASES={} "
      "WEIR_LANE_SIM_COLD={} WEIR_LANE_SIM_FORKS={} WEIR_LANE_SIM_STORE_FAULTS={} "
      "build/dev/tests/unit/cluster/cluster_lane_sim --gtest_filter=lane_sim.one_seed",
      o.seed, o.lanes, o.lose_releases ? 1 : 0, o.cold ? 1 : 0, o.forks, o.cold_store_faults > 0 ? 1 : 0);
}

TEST(lane_sim, without_faults_every_write_and_read_succeeds) {
  log::set_level("critical");
  lane_sim_options o;
  o.faults = false;
  const lane_sim_report r = run_lane_sim(o);
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_GT(r.acked, 100u);
  EXPECT_GT(r.producer_acked, 30u);
  EXPECT_GT(r.reads, 50u);
  EXPECT_EQ(r.forks, 2u);
  EXPECT_GT(r.fork_reads, 2u);
  EXPECT_EQ(r.crashes + r.kills, 0u);
  EXPECT_EQ(r.reads_refused, 0u);
  EXPECT_EQ(r.failed_no_leader, 0u);
  EXPECT_GT(r.evicted, 0u);           // reads came back from the node log
  EXPECT_GT(r.node_log_records, 0u);  // records point where the node log wrote them
  EXPECT_GT(r.snapshots, 0u);         // snapshots referenced those records
}

TEST(lane_sim, a_seed_reproduces_its_run) {
  log::set_level("critical");
  lane_sim_options o;
  o.seed = 42;
  const lane_sim_report a = run_lane_sim(o);
  const lane_sim_report b = run_lane_sim(o);
  ASSERT_TRUE(a.ok) << a.failure;
  EXPECT_EQ(a.tasks, b.tasks);
  EXPECT_EQ(a.acked, b.acked);
  EXPECT_EQ(a.reads, b.reads);
  EXPECT_EQ(a.submits, b.submits);
  EXPECT_EQ(a.crashes, b.crashes);
  EXPECT_EQ(a.evicted, b.evicted);
}

TEST(lane_sim, seeds_with_faults) {
  log::set_level("critical");  // not the torn tails and failed syncs (one_seed shows them)
  const std::uint64_t count = env_u64("WEIR_LANE_SIM_SEEDS", 200);
  const std::uint64_t first = env_u64("WEIR_LANE_SIM_FIRST_SEED", 1);
  lane_sim_report t;
  std::uint64_t failed = 0;
  for (std::uint64_t seed = first; seed < first + count; ++seed) {
    lane_sim_options o;
    o.seed = seed;
    o.lanes = seed % 4 == 0 ? 2 : 1;  // a quarter of the runs with two lanes per node
    const lane_sim_report r = run_lane_sim(o);
    if (!r.ok) {
      ADD_FAILURE() << r.failure << replay(o);
      if (++failed >= 3) break;
    }
    t.acked += r.acked;
    t.producer_acked += r.producer_acked;
    t.duplicates += r.duplicates;
    t.failed_unknown += r.failed_unknown;
    t.failed_no_leader += r.failed_no_leader;
    t.lost_with_node += r.lost_with_node;
    t.reads += r.reads;
    t.reads_refused += r.reads_refused;
    t.forks += r.forks;
    t.fork_reads += r.fork_reads;
    t.minority_checks += r.minority_checks;
    t.crashes += r.crashes;
    t.torn_crashes += r.torn_crashes;
    t.kills += r.kills;
    t.disk_failures += r.disk_failures;
    t.partitions += r.partitions;
    t.evicted += r.evicted;
    t.snapshots += r.snapshots;
    t.node_log_records += r.node_log_records;
    t.data_syncs += r.data_syncs;
    t.kept_dropped += r.kept_dropped;
  }
  fmt::print(
      "{} seeds from {}: {} appends acknowledged ({} by producers, {} duplicates), failed {} unknown, {} no "
      "leader, {} lost with their node; reads {} served, {} refused; forks {}, {} reads of them; minority "
      "attempts {}; crashes {} (torn {}), kills {}, disk failures {}, partitions {}; {} records evicted, {} "
      "snapshots; {} records in node logs, {} data-log syncs, {} kept node-log segments deleted\n",
      count, first, t.acked, t.producer_acked, t.duplicates, t.failed_unknown, t.failed_no_leader,
      t.lost_with_node, t.reads, t.reads_refused, t.forks, t.fork_reads, t.minority_checks, t.crashes,
      t.torn_crashes, t.kills, t.disk_failures, t.partitions, t.evicted, t.snapshots, t.node_log_records,
      t.data_syncs, t.kept_dropped);
  // The runs did what they are for.
  EXPECT_GT(t.acked, count * 40);
  EXPECT_GT(t.producer_acked, count * 10);
  EXPECT_GT(t.duplicates, 0u);
  EXPECT_GT(t.reads, count * 20);
  EXPECT_GT(t.reads_refused, 0u);
  EXPECT_GT(t.failed_unknown + t.lost_with_node, 0u);
  EXPECT_GT(t.minority_checks, 0u);
  EXPECT_GT(t.crashes, count);
  EXPECT_GT(t.torn_crashes, 0u);
  EXPECT_GT(t.kills, 0u);
  EXPECT_GT(t.disk_failures, 0u);
  EXPECT_GT(t.partitions, count / 2);
  EXPECT_GT(t.forks, count);
  EXPECT_GT(t.fork_reads, count);
  EXPECT_GT(t.evicted, count * 10);
  EXPECT_GT(t.snapshots, count);
  EXPECT_GT(t.node_log_records, count * 40);  // each byte written once: records point into node logs
  EXPECT_GT(t.data_syncs, 0u);                // snapshot transfers still land in data logs
  EXPECT_GT(t.kept_dropped, 0u);              // node-log segments kept for records, then deleted
}

// Lost fork releases (lane_sim.h, invariant 7): deletes whose releases are never proposed, a node killed
// right after applying one it proposed, retains whose fork is never created; the production fork sweeps
// give every reference back and erase the soft-deleted sources.
TEST(lane_sim, lost_fork_releases_are_recovered_by_the_fork_sweep) {
  log::set_level("critical");
  std::uint64_t lost = 0, recovered = 0;
  const std::uint64_t count = env_u64("WEIR_LANE_SIM_RELEASE_SEEDS", 10);
  for (std::uint64_t seed = 1; seed <= count; ++seed) {
    lane_sim_options o;
    o.seed = 7000 + seed;
    o.lanes = seed % 2 == 0 ? 2 : 1;
    o.lose_releases = true;
    const lane_sim_report r = run_lane_sim(o);
    ASSERT_TRUE(r.ok) << r.failure << replay(o);
    lost += r.releases_lost;
    recovered += r.releases_recovered;
  }
  std::printf("lost releases: %llu lost, %llu references given back by the sweeps\n",
              static_cast<unsigned long long>(lost), static_cast<unsigned long long>(recovered));
  EXPECT_GT(lost, 0u);
  EXPECT_GE(recovered, lost);  // and the lost retains' references
}

// The same run without sweeps does not settle: what the case above checks is the sweep's doing.
TEST(lane_sim, without_the_fork_sweep_lost_releases_keep_their_sources) {
  log::set_level("critical");
  lane_sim_options o;
  o.seed = 7001;
  o.lose_releases = true;
  o.fork_sweep_ms = 0;
  o.release_phase_limit_ms = 10000;
  const lane_sim_report r = run_lane_sim(o);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.failure.find("still holds fork references"), std::string::npos) << r.failure;
  EXPECT_GT(r.releases_lost, 0u);
}

// The cold tier on every node (lane_sim.h, invariant 8): uploads, index records, reclaims on every node
// and reads from the bucket under the same faults, every check above holding with bytes read back from
// objects, and the nodes' indexes agreeing with each other and with the bucket at the end. A third of
// the runs meet retryable faults of the bucket.
TEST(lane_sim, seeds_with_the_cold_tier) {
  log::set_level("critical");
  const std::uint64_t count = env_u64("WEIR_LANE_SIM_COLD_SEEDS", 120);
  const std::uint64_t first = env_u64("WEIR_LANE_SIM_COLD_FIRST_SEED", 3000);
  lane_sim_report t;
  std::uint64_t failed = 0;
  for (std::uint64_t seed = first; seed < first + count; ++seed) {
    const lane_sim_options o = cold_options(seed);
    const lane_sim_report r = run_lane_sim(o);
    if (!r.ok) {
      ADD_FAILURE() << r.failure << replay(o);
      if (++failed >= 3) break;
    }
    t.acked += r.acked;
    t.reads += r.reads;
    t.crashes += r.crashes + r.kills;
    t.cold_puts += r.cold_puts;
    t.cold_objects += r.cold_objects;
    t.cold_extents += r.cold_extents;
    t.cold_forgotten += r.cold_forgotten;
    t.cold_reclaims += r.cold_reclaims;
    t.cold_deleted += r.cold_deleted;
    t.cold_snapshots += r.cold_snapshots;
    t.cold_snapshot_objects += r.cold_snapshot_objects;
    t.cold_snapshot_parts += r.cold_snapshot_parts;
    t.object_reads += r.object_reads;
    t.object_read_failures += r.object_read_failures;
    t.foreign_locates += r.foreign_locates;
    t.kept_dropped += r.kept_dropped;
  }
  fmt::print(
      "{} cold seeds from {}: {} appends acknowledged, {} reads served, {} crashes and kills; {} objects "
      "put, "
      "{} recorded, {} extents at the end (all nodes), {} bytes forgotten in {} reclaims, {} reads from the "
      "bucket ({} failed; {} placed by another lane's index), {} objects deleted by the sweeps, {} restore "
      "snapshots naming {} objects at the end (in {} parts); {} kept node-log segments deleted\n",
      count, first, t.acked, t.reads, t.crashes, t.cold_puts, t.cold_objects, t.cold_extents,
      t.cold_forgotten, t.cold_reclaims, t.object_reads, t.object_read_failures, t.foreign_locates,
      t.cold_deleted, t.cold_snapshots, t.cold_snapshot_objects, t.cold_snapshot_parts, t.kept_dropped);
  // The tier did what it is for, on every seed's scale.
  EXPECT_GT(t.cold_puts, count);
  EXPECT_GT(t.cold_objects, count);
  EXPECT_GT(t.cold_extents, count);
  EXPECT_GT(t.cold_forgotten, count * 1000);
  EXPECT_GT(t.cold_reclaims, count);
  EXPECT_GT(t.object_reads, count);
  EXPECT_GT(t.object_read_failures, 0u);
  EXPECT_GT(t.foreign_locates, 0u);  // forks on another lane than their source read its bytes in objects
  EXPECT_GT(t.cold_deleted, 0u);     // orphans of leaders that stepped down, deleted streams' objects
  EXPECT_GT(t.cold_snapshots, count);
  EXPECT_GT(t.cold_snapshot_objects, count);
  EXPECT_GT(t.cold_snapshot_parts, count);  // snapshots larger than one object, joined from their parts
  EXPECT_GT(t.crashes, count);
  EXPECT_GT(t.kept_dropped, 0u);  // records left to the bucket free their node-log segments
}

// One seed with its trace (WEIR_LANE_SIM_SEED; seed 1 quietly without it, so that the test always runs).
TEST(lane_sim, one_seed) {
  lane_sim_options o;
  if (const char* s = std::getenv("WEIR_LANE_SIM_SEED")) {
    o.seed = std::strtoull(s, nullptr, 10);
    o.verbose = true;
  } else {
    log::set_level("critical");
  }
  o.lanes = static_cast<int>(env_u64("WEIR_LANE_SIM_LANES", o.seed % 4 == 0 ? 2 : 1));
  o.nodes = static_cast<int>(env_u64("WEIR_LANE_SIM_NODES", 3));
  o.snapshot_entries = static_cast<std::uint32_t>(env_u64("WEIR_LANE_SIM_SNAPSHOT_ENTRIES", 12));
  o.lose_releases = env_u64("WEIR_LANE_SIM_RELEASES", 0) != 0;
  o.cold = env_u64("WEIR_LANE_SIM_COLD", 0) != 0;
  o.forks = static_cast<int>(env_u64("WEIR_LANE_SIM_FORKS", static_cast<std::uint64_t>(o.forks)));
  o.cold_store_faults = env_u64("WEIR_LANE_SIM_STORE_FAULTS", 0) != 0 ? cold_store_faults : 0;
  o.cold_keep_bytes = env_u64("WEIR_LANE_SIM_KEEP", o.cold_keep_bytes);
  const lane_sim_report r = run_lane_sim(o);
  EXPECT_TRUE(r.ok) << r.failure;
  fmt::print(
      "seed {}: {} submitted, {} acknowledged, {} reads ({} refused), {} forks, crashes {}, kills {}, "
      "partitions {}, {} evicted, {} snapshots, {} tasks\n",
      o.seed, r.submits, r.acked, r.reads, r.reads_refused, r.forks, r.crashes, r.kills, r.partitions,
      r.evicted, r.snapshots, r.tasks);
  if (o.cold)
    fmt::print(
        "cold tier: {} objects put, {} recorded, {} extents, {} bytes forgotten, {} reads from the bucket\n",
        r.cold_puts, r.cold_objects, r.cold_extents, r.cold_forgotten, r.object_reads);
}

}  // namespace
}  // namespace weir::cluster::sim
