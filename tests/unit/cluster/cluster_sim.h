// cluster_sim: a deterministic simulation of a weir cluster: the real cluster::replicator (libraft groups
// over raft::node_io, forwarding, ReadIndex) and the real streams::state_machine on every node, over an
// in-memory network (mem_links on raft::mem_network) and an in-memory disk per node (storage::mem_env:
// a crash drops unsynced bytes or keeps a torn prefix of them), all driven by one raft::sim_scheduler
// (seeded generator, manual clock). A seed fixes the whole run.
//
// The workload: clients that create streams, append to them (plain appends, and idempotent producers
// that send the same Producer-Seq again after every failure until it is acknowledged) and read them
// (read_index on a node, then that node's state machine), each through a random node. Every appended
// body is a unique token, so the final streams say which append landed where. Clients also fork streams
// into other groups as the server does (fork_retain in the source's group; once it is applied, the
// fork's create with the retain's place, fork_resolution::origin, in the fork's group) and read a new
// fork at once on a random node: a read of a fork waits, after its read index, until the source's group
// applied the retain on that node (cluster::applied_waits, as replica::raft_lane does).
//
// The faults: partitions, packet loss, delays and reordering, slow disks, failed syncs (the node stops,
// as node::fail makes a server do, and starts again), power losses of one or two
// nodes (unsynced bytes lost, half of them torn), process kills (the page cache survives), and restarts
// with a fresh replicator and an empty state machine that replays the node log. Then the recovery
// phase: heal, reliable links, restart every node, finish every client, run until quiet.
//
// With snapshot_threshold, groups snapshot their part of the state machine (state_machine::snapshot_part)
// and libraft drops the entries they cover: restarted nodes restore them from the node log, and nodes
// that fell behind get them installed by the leader (state_machine::restore_part).
//
// Checked while running and at the end:
//   1. committed entries identical: the command any node applies at (group, index), in any incarnation,
//      is the same everywhere, indexes rise; after recovery every node applied exactly the committed
//      entries, and every node's state machine is the same (state_machine::snapshot bytes, and each
//      stream's metadata and content);
//   2. no acknowledged write lost: every acknowledged append is in its stream at the end, exactly once;
//      a plain append that failed with no_leader is in none; a ticket is answered only by the command it
//      was given, and only once;
//   3. producers exactly-once: every producer's appends are in its stream once each, in order; no
//      producer append is ever answered with a sequence error;
//   4. reads linearizable: every read returns a prefix of the stream's final content that holds every
//      append acknowledged before the read began and nothing begun after it ended; a read that began
//      after another ended returns at least as much; appends acknowledged before another began come
//      first in the stream; a fork (never appended to) holds its source's first bytes up to its fork
//      point, and every read of it returns exactly that (a node whose source group lags would return
//      less without the wait), and finds it once its create was acknowledged before the read began;
//   5. a minority never acknowledges: a write or read on a node that could not reach a majority (cut
//      off, or the others down) from its start to its answer, with nothing changed in between, is a
//      failure;
//   6. liveness after the faults: within recovery_limit_ms every client finishes and every node applies
//      everything committed.
#pragma once

#include <cstdint>
#include <string>

namespace weir::cluster::sim {

struct sim_options {
  std::uint64_t seed = 1;
  int nodes = 3;
  int groups = 4;
  // Each node splits its groups over this many replicators (cluster/replicator.h, "Lanes"), each with
  // its own node log and links on a network of its own (the faults strike every lane's network alike);
  // lane 0 decides the membership, the others follow it.
  int lanes = 1;
  int streams = 8;  // stream s lives in group s % groups
  // Forks: stream streams + k is a fork of stream (k + 1) % streams, made once (in another group than
  // its source's whenever groups > 1), except the last, which is a fork of the first fork (a chain).
  int forks = 4;
  int clients = 8;
  std::int64_t fault_phase_ms = 8000;  // faults and workload; then the recovery phase
  std::int64_t recovery_limit_ms = 30000;
  bool faults = true;
  bool verbose = false;  // print the run's events (what a failing seed is rerun with)
  // Group snapshots (replicator::options::snapshot_threshold; 0: none) and the entries kept after one.
  // Snapshots here hold every record inline (a simulated node has no data log).
  unsigned snapshot_threshold = 0;
  unsigned snapshot_trailing = 4;
  // Lost fork releases (docs/replication.md, "Forks"): after the checks, a phase on a healed cluster that
  // takes a reference on each fork's source for a fork that is never created, soft-deletes the sources
  // and deletes the forks, and loses releases as a server can: half the releases the deletes cause are
  // never proposed, and the node that answers the first delete causing one is killed at once (its
  // releases go with it). Every node runs a fork sweep (streams/fork_sweep.h) every fork_sweep_ms (0:
  // none) over references older than fork_sweep_min_age_ms. Checked: within release_phase_limit_ms every
  // node holds no fork reference, no source is left, and every node holds the same state.
  bool lose_releases = false;
  std::int64_t fork_sweep_ms = 0;
  std::int64_t fork_sweep_min_age_ms = 2000;
  std::int64_t release_phase_limit_ms = 60000;
};

struct sim_report {
  bool ok = true;
  std::string failure;                 // names the seed and the broken invariant, with values
  std::uint64_t submits = 0;           // write attempts handed to a replicator
  std::uint64_t acked = 0;             // appends acknowledged (plain and producer)
  std::uint64_t producer_acked = 0;    // of which producer appends
  std::uint64_t duplicates = 0;        // producer retries answered as duplicates
  std::uint64_t failed_unknown = 0;    // submit_error::unknown
  std::uint64_t failed_no_leader = 0;  // submit_error::no_leader
  std::uint64_t lost_with_node = 0;    // attempts in flight on a node that went down
  std::uint64_t reads = 0;             // served: read_index ready(true), then the state machine
  std::uint64_t reads_refused = 0;     // ready(false)
  std::uint64_t forks = 0;             // forks created (create acknowledged)
  std::uint64_t fork_reads = 0;        // reads of a fork served
  std::uint64_t fork_waits = 0;        // of which found the source's group behind the retain at first
  std::uint64_t minority_checks = 0;   // attempts made and answered in one minority epoch
  std::uint64_t crashes = 0;           // power losses
  std::uint64_t torn_crashes = 0;      // of which kept a torn prefix of the unsynced bytes
  std::uint64_t kills = 0;             // process kills (unsynced bytes survive)
  std::uint64_t disk_failures = 0;     // nodes stopped because a sync of their node log failed
  std::uint64_t partitions = 0;
  std::uint64_t entries_applied = 0;     // commands applied, all nodes, all incarnations
  std::uint64_t final_entries = 0;       // committed commands at the end, all groups
  std::uint64_t snapshots_taken = 0;     // group snapshots, all nodes, all incarnations
  std::uint64_t snapshots_deferred = 0;  // due snapshots put off (callbacks::snapshot_later)
  std::uint64_t snapshots_restored = 0;  // at start from the node log, or installed from a leader
  std::uint64_t releases_lost = 0;       // lose_releases: releases never proposed (or failed)
  std::uint64_t releases_recovered = 0;  // fork sweeps' releases that gave a reference back, all nodes
  std::uint64_t tombstones = 0;          // dead origins recorded at the end (node 1)
  // Leadership as the replicators counted it (replicator::leadership(), all nodes, all incarnations).
  std::uint64_t elections_started = 0;
  std::uint64_t leaderships_won = 0;
  std::uint64_t leaderships_lost = 0;
  std::uint64_t tasks = 0;
  std::int64_t recovery_ms = -1;  // simulated time from the end of the faults to quiet
};

sim_report run_cluster_sim(const sim_options& o);

}  // namespace weir::cluster::sim
