// lane_sim: the production partition of a cluster node under the deterministic simulation. Each node
// runs a replica::partition (its state machine, its hot tier of a few KiB, its data log on mem_env with
// its disk work on a sim_disk_worker) behind a replica::raft_lane (the real replicator, node log and
// group snapshots that reference the data log's records), over the in-memory network (mem_links on
// raft::mem_network), all on one raft::sim_scheduler: a seed fixes the whole run. Nothing of the apply
// path is copied here: commands go in through raft_lane::submit and come out of the partition's reads.
//
// The workload: clients that append unique tokens to a few streams through random nodes. The faults:
// partitions, loss and delays, slow disks, process kills (the page cache survives) and power losses of
// one node at a time (unsynced bytes lost, half of the time a torn prefix kept), restarts that rebuild a
// node from its node log, its snapshots and its data log. Then: heal, restart every node, let every
// client finish.
//
// Checked at the end, on every node, through partition::read_visible (records evicted from the hot
// tier are read back from the data log): every acknowledged token is in its stream exactly once; every
// token there was submitted; every node holds the same bytes for every stream.
#pragma once

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
  int clients = 4;
  int appends_per_client = 20;
  std::int64_t fault_phase_ms = 4000;
  // Longer than libraft's install timeout (30 s): a snapshot transfer that stalled (a chunk lost) is
  // dropped after 10 s, and libraft sends the snapshot again only then.
  std::int64_t recovery_limit_ms = 60000;
  bool faults = true;
  bool verbose = false;
  std::size_t hot_bytes = 2048;             // small: records leave memory once their data log syncs
  std::uint64_t data_segment_bytes = 4096;  // small: reclaims delete segments while the run goes on
  std::uint32_t snapshot_entries = 12;      // group snapshots reference the data log's records
};

struct lane_sim_report {
  bool ok = true;
  std::string failure;
  std::uint64_t acked = 0;      // appends acknowledged
  std::uint64_t not_acked = 0;  // failed or lost with their node
  std::uint64_t kills = 0, crashes = 0, partitions = 0;
  std::uint64_t evicted = 0;     // records that left a hot tier (all nodes, all incarnations)
  std::uint64_t data_syncs = 0;  // data log syncs (all nodes, all incarnations)
  std::uint64_t snapshots = 0;   // group snapshots taken (all nodes, all incarnations)
  std::uint64_t tasks = 0;
};

lane_sim_report run_lane_sim(const lane_sim_options& o);

}  // namespace weir::cluster::sim
