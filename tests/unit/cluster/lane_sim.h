// lane_sim: the deterministic simulation of a weir cluster, running the production partition of every
// node. Each node runs a replica::partition (its state machine, its hot tier of a few KiB, its data log
// on mem_env with its disk work on a sim_disk_worker) behind a replica::raft_lane (the real replicator,
// node log and group snapshots that reference the data log's records, the real fork links and waits,
// the real fork sweep), over the in-memory network (mem_links on tests/support/sim's mem_network), all on
// one sim_scheduler: a seed fixes the whole run. Nothing of the apply path is copied here: commands go in
// through raft_lane::submit, reads wait through raft_lane::linearize and come out of partition reads.
//
// The workload: clients that create streams, append to them (plain appends, and idempotent producers
// that send the same Producer-Seq again after every failure until it is acknowledged) and read them
// (linearize on a random node, then that node's partition), each through a random node. Every appended
// body is a unique token (padded so that the streams outgrow the hot tier many times over), so the final
// streams say which append landed where. Clients also fork streams as the server does (fork_retain in
// the source's group; once it is answered, the fork's create with the retain's resolution, whose origin
// the fork records, in the fork's group) and read a new fork at once on a random node: its read waits in
// raft_lane::linearize until the source's group applied the retain on that node.
//
// The faults: partitions of any side, packet loss, delays and reordering, slow disks, failed syncs (the
// node stops, as node::fail makes a server do, and starts again), power losses of one or two nodes
// (unsynced bytes lost, half of the time a torn prefix kept), process kills (the page cache survives),
// restarts that rebuild a node from its node log, its group snapshots and its data log. Then the
// recovery phase: heal, reliable links, restart every node, finish every client, wait until every node
// applied everything committed.
//
// Checked while running and at the end (final reads through every node's partition, after a
// linearize: records evicted from the hot tier are read back from the data log):
//   1. every node holds the same streams: the same bytes, generation and tail for every stream and fork;
//      every record applied reached its data log (none is left in memory without a place on disk);
//   2. no acknowledged write lost: every acknowledged append is in its stream at the end, exactly once;
//      every token there was appended to it; a plain append that failed with cluster_unavailable (no
//      leader took it) is in none; a stream exists exactly when its create was acknowledged;
//   3. producers exactly-once: every producer's appends are in its stream once each, in order; no
//      producer append is ever answered with a sequence error;
//   4. reads linearizable: every read returns a prefix of the stream's final content that holds every
//      append acknowledged before the read began and nothing begun after it ended; a read that began
//      after another ended returns at least as much; appends acknowledged before another began come
//      first in the stream; a fork holds its source's first bytes up to its fork point, and every read
//      of it returns exactly that (a node whose source group lags would return less without the wait),
//      and finds it once its create was acknowledged before the read began;
//   5. a minority never acknowledges: a write or read on a node that could not reach a majority (cut
//      off, or the others down) from its start to its answer, with nothing changed in between, fails;
//   6. liveness after the faults: within recovery_limit_ms every client finishes and every node applies
//      everything committed; at the end, each replicator's leaderships won less those lost are the
//      groups it leads;
//   7. lost fork releases (lose_releases): after the checks, on a healed cluster, references taken for
//      forks never created, sources soft-deleted and forks deleted while half of the releases are lost
//      (and the node that answers the first delete causing one is killed at once): the production fork
//      sweeps give every reference back; within release_phase_limit_ms no node holds a fork reference
//      or a deleted stream.
//   8. the cold tier (cold): every node's partitions move stream bytes to ONE bucket shared by all nodes
//      (a tier::mem_object_store whose puts and reads are answered on the node's executor later, never
//      inline), each group's leader uploading under its raft term, the index records raft entries every
//      node applies, every node forgetting records in objects past keep_bytes and reading them back from
//      the bucket (invariants 1-4 then cover bytes read from objects). A restarted node gets its tier
//      again. At the end (movers stopped, every node applied every entry): every node's cold index has the
//      same extents, naming the same objects, for every stream; every extent's bytes in the bucket are
//      the stream's bytes at those offsets; no key was ever put twice with different bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace weir::cluster::sim {

struct lane_sim_options {
  std::uint64_t seed = 1;
  int nodes = 3;
  int groups = 3;
  // Each node splits its groups over this many lanes (a partition and a raft lane each, on networks of
  // their own: the faults strike every lane's alike); a node's lanes share its executor.
  int lanes = 1;
  int streams = 4;
  // Forks: stream streams + k is a fork of stream (k + 1) % streams, made once, except the last (of
  // two or more), which is a fork of the first fork (a chain).
  int forks = 2;
  int clients = 5;
  std::int64_t fault_phase_ms = 3000;  // faults and workload; then the recovery phase
  // Longer than libraft's install timeout (30 s): a snapshot transfer that stalled (a chunk lost) is
  // dropped after 10 s, and libraft sends the snapshot again only then.
  std::int64_t recovery_limit_ms = 60000;
  bool faults = true;
  bool verbose = false;                     // print the run's events (what a failing seed is rerun with)
  std::size_t hot_bytes = 2048;             // small: records leave memory once their data log syncs
  std::uint64_t data_segment_bytes = 4096;  // small: reclaims delete segments while the run goes on
  // Small too: compaction keeps node-log segments for the records in them, and drop_kept deletes them.
  std::uint64_t log_segment_bytes = 16384;
  std::uint32_t snapshot_entries = 12;  // group snapshots reference the data log's records
  // The lost fork releases phase (invariant 7), with a fork sweep every fork_sweep_ms on every lane.
  bool lose_releases = false;
  std::int64_t fork_sweep_ms = 1000;
  std::int64_t fork_sweep_min_age_ms = 2000;
  std::int64_t release_phase_limit_ms = 60000;
  // The cold tier (invariant 8): small objects cut often, a short scan and a small keep, so that uploads,
  // index records, reclaims and reads from the bucket happen many times a seed. A fork on another lane
  // than its source reads the source's bytes in objects through that lane's index, as a node does.
  bool cold = false;
  std::uint64_t cold_object_bytes = 1024;
  std::uint32_t cold_block_bytes = 256;  // several CRC-checked blocks per object
  std::int64_t cold_max_age_ms = 200;
  std::int64_t cold_scan_ms = 100;
  std::uint64_t cold_keep_bytes = 1024;  // per partition (lane) of each node
  std::int64_t cold_store_max_ms = 40;   // the bucket answers within 1..this
  double cold_store_faults = 0;          // the chance that a call meets a retryable fault
};

struct lane_sim_report {
  bool ok = true;
  std::string failure;                 // names the seed and the broken invariant, with values
  std::uint64_t submits = 0;           // write attempts handed to a raft lane
  std::uint64_t acked = 0;             // appends acknowledged (plain and producer)
  std::uint64_t producer_acked = 0;    // of which producer appends
  std::uint64_t duplicates = 0;        // producer retries answered as duplicates
  std::uint64_t failed_unknown = 0;    // cluster_outcome_unknown
  std::uint64_t failed_no_leader = 0;  // cluster_unavailable
  std::uint64_t lost_with_node = 0;    // attempts in flight on a node that went down
  std::uint64_t reads = 0;             // served: linearize, then the partition
  std::uint64_t reads_refused = 0;     // linearize answered false
  std::uint64_t forks = 0;             // forks created (create acknowledged)
  std::uint64_t fork_reads = 0;        // reads of a fork served
  std::uint64_t minority_checks = 0;   // attempts made and answered in one minority epoch
  std::uint64_t kills = 0, crashes = 0, torn_crashes = 0, disk_failures = 0, partitions = 0;
  std::uint64_t evicted = 0;             // records that left a hot tier (all nodes, all incarnations)
  std::uint64_t data_syncs = 0;          // data log syncs (all nodes, all incarnations)
  std::uint64_t node_log_records = 0;    // records applied pointing into the node log (all incarnations)
  std::uint64_t kept_dropped = 0;        // kept node-log segments deleted (all nodes, all incarnations)
  std::uint64_t snapshots = 0;           // group snapshots taken (all nodes, all incarnations)
  std::uint64_t releases_lost = 0;       // lose_releases: releases never proposed
  std::uint64_t releases_recovered = 0;  // references the fork sweeps gave back (all nodes)
  // The cold tier (all nodes, all incarnations).
  std::uint64_t cold_puts = 0;              // objects put in the bucket (successful answers)
  std::uint64_t cold_objects = 0;           // objects whose index record a leader saw applied
  std::uint64_t cold_extents = 0;           // extents in the nodes' cold indexes at the end (summed)
  std::uint64_t cold_forgotten = 0;         // stream bytes forgotten locally (left to the bucket)
  std::uint64_t cold_reclaims = 0;          // mover passes that forgot records
  std::uint64_t cold_deleted = 0;           // objects the groups' sweeps deleted from the bucket
  std::uint64_t cold_snapshots = 0;         // restore snapshots uploaded (all nodes)
  std::uint64_t cold_snapshot_objects = 0;  // objects the groups' newest restore snapshots name (at the end)
  std::uint64_t cold_snapshot_parts = 0;    // the parts those snapshots were uploaded in (0 for one object)
  std::uint64_t object_reads = 0;           // partition reads served from the bucket
  std::uint64_t foreign_locates = 0;        // of them, bytes placed by another lane's index (a fork's source)
  std::uint64_t object_read_failures = 0;   // of which failed (a store fault): the read was refused
  std::uint64_t tasks = 0;
};

lane_sim_report run_lane_sim(const lane_sim_options& o);

}  // namespace weir::cluster::sim
