// cluster_sim: a deterministic simulation of a weir raft cluster. N nodes, each with its own mem_env (the
// disk: a crash drops unsynced bytes), node_log, node_io and G libraft groups, over a mem_network, all
// driven by one sim_scheduler (seeded generator + manual clock). A seed fixes the whole run.
//
// The workload: the leader of each group proposes small commands; each group's state machine appends
// them to a list. The faults: partitions, packet drops, delays and reordering, disk latency, crashes of
// whole nodes (unsynced bytes lost; some right after the node voted) and restarts. Checked while running and
// at the end:
//   1. committed order: the k-th command any node applies in a group is the same on every node and in
//      every incarnation (same position -> same bytes), so an acknowledged command is never lost or
//      replaced on any node that applies that far;
//   2. election safety: no two nodes lead one group in one term;
//   3. a node that cannot reach a majority (partition, crashes) for the whole life of a proposal never
//      acknowledges it;
//   4. after the faults stop (heal, restart every node), every group elects a leader, commits a new
//      command, and every node applies every committed command (liveness of the I/O: no message held
//      forever, no lost callback).
#pragma once

#include <cstdint>
#include <string>

namespace weir::raft::sim {

struct sim_options {
  std::uint64_t seed = 1;
  int nodes = 3;
  int groups = 8;
  std::int64_t fault_phase_ms = 8000;  // faults and workload; then the recovery phase
  std::int64_t recovery_limit_ms = 30000;
  bool faults = true;
  // libraft snapshots (snapshot_put / snapshot_get / InstallSnapshot) every `snapshot_threshold` entries;
  // 0 disables them.
  unsigned snapshot_threshold = 0;
  unsigned snapshot_trailing = 8;
  // Small node log segments, so that compaction (segment roll, carry forward, deletion) runs in every
  // seed with snapshots; at the end each node's log must be bounded by its live state.
  std::uint64_t log_segment_bytes = 4096;
  // Every InstallSnapshot goes through node_io's snapshot-transfer hooks (set_snapshot_transfers): the
  // sender's handler sends it naming a transfer of no chunks, the receiver's hands it back to libraft
  // (deliver_install), as replica/snapshot_transfer does after its chunks.
  bool relay_installs = false;
  // libraft's pre-vote. Off: libraft 0.15's pre-vote can live-lock a group (docs/replication.md, bug 4);
  // on, seed 201349 shows it.
  bool pre_vote = false;
  bool verbose = false;
};

struct sim_report {
  bool ok = true;
  std::string failure;  // names the seed and the broken invariant, with values
  std::uint64_t acked = 0;
  std::uint64_t proposals = 0;
  std::uint64_t crashes = 0;
  std::uint64_t vote_crashes = 0;    // crashes right after a vote, before its sync
  std::uint64_t torn_crashes = 0;    // crashes that kept a torn prefix of the unsynced bytes
  std::uint64_t tail_bytes_cut = 0;  // torn tails the node log cut at restart
  std::uint64_t partitions = 0;
  std::uint64_t elections = 0;  // distinct (group, term) leaders seen
  std::uint64_t minority_checks = 0;
  std::uint64_t frames_held = 0;
  std::uint64_t results_clamped = 0;  // node_io's libraft 0.15 workarounds, exercised
  std::uint64_t entries_trimmed = 0;
  std::uint64_t snapshots_restored = 0;
  std::uint64_t installs_relayed = 0;  // relay_installs: delivered through deliver_install
  std::uint64_t tasks = 0;
  std::uint64_t appends = 0;               // raft_io append calls, all nodes
  std::uint64_t syncs = 0;                 // node log batches synced, all nodes
  std::uint64_t log_segments_deleted = 0;  // node log compaction, all nodes
  std::uint64_t log_entries_carried = 0;
  std::uint64_t log_bytes = 0;       // node logs at the end, all nodes
  std::uint64_t log_live_bytes = 0;  // what they recover at the end, all nodes
  // How far a running node log was above its compaction bound (2 x live + 2 segments; node_log.h), at
  // most, over the run (sampled after every event): the lag of compaction under writes.
  std::uint64_t log_max_over_bound = 0;
  std::uint64_t log_over_bound_sum = 0;  // the excess summed over samples (0 when under the bound)
  std::uint64_t log_samples = 0;
  std::int64_t all_led_ms = -1;  // simulated time when every group had had a leader
};

sim_report run_cluster_sim(const sim_options& o);

}  // namespace weir::raft::sim
