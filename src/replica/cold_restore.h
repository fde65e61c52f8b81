// cold_restore: a single node's data directory rebuilt from the bucket alone (docs/cold-tier.md,
// "Restore"). The bucket holds, per epoch, each group's restore snapshots (replica/cold_snapshots.h)
// beside its objects. A restore takes, from the newest epoch that has one for every group, each group's
// newest snapshot, and writes it as that group's log: a checkpoint at the snapshot's lsn and no segment.
// The node then starts from those checkpoints as from any other: bytes in objects are read from the
// bucket, the bytes that were not yet in objects are in the snapshot, and it uploads under an epoch
// above every epoch in the bucket, so that nothing it writes can collide with an object of before.
//
// Blocking (object store calls and file writes): runs at start-up, before any loop.
#pragma once

#include <map>

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "storage/env.h"
#include "tier/object_key.h"
#include "tier/object_store.h"
#include "tier/restore_snapshot.h"

namespace weir::replica {

struct restore_point {
  tier::cold_epoch epoch;       // the epoch whose snapshots are used
  tier::cold_epoch next_epoch;  // the epoch the restored node uploads under
  struct group {
    std::string key;
    tier::restore_snapshot_header header;
    std::vector<std::byte> object;  // the whole snapshot object (header and state), checked
    std::span<const std::byte> state() const {
      return std::span(object).subspan(tier::restore_snapshot_header_size);
    }
  };
  std::vector<group> groups;  // by group index
  // The oldest of the groups' snapshot times: every group holds at least what was durable then.
  std::int64_t taken_at_ms() const;
};

// Finds and downloads the newest complete set of restore snapshots. Errors: a bucket with no snapshot
// set (with what it found), a listing or download the store refused, a damaged snapshot (by key).
result<restore_point> find_restore_point(tier::object_store& store);

// Writes the restored logs of `p` into <data_dir>/wal, which must not exist: a marker file first
// (`restoring`), then each group's checkpoint in wal/core-<i>, the epoch (wal/cold-epoch), the log count
// (wal/cores), and the marker removed last. A start that finds the marker refuses (open_durable_store):
// an interrupted restore is never served as data.
status write_restored_logs(storage::env& e, const std::string& data_dir, const restore_point& p);

// A cluster node's restore (docs/cold-tier.md, "Restore"): every node of the new cluster writes the same
// thing from the same snapshots. For each raft group, its lane's node log (raft/node.log, lane l:
// raft/lane-<l>/node.log) gets the group's snapshot as an installed raft snapshot at the snapshot's raft
// index, in the term its key names, with the configuration of `members` (id -> peer address, all
// voters); the groups start from it as from one they took. The group count must be the cluster's.
// <data_dir>/raft must not exist; the marker (wal/restoring) and the epoch (wal/cold-epoch) as in
// write_restored_logs.
status write_restored_cluster(storage::env& e, const std::string& data_dir, const restore_point& p,
                              std::uint32_t lanes, const std::map<std::uint64_t, std::string>& members);

// The epoch this node uploads under: <data_dir>/wal/cold-epoch, or 1 when the directory has none (it was
// never restored).
result<tier::cold_epoch> read_cold_epoch(storage::env& e, const std::string& data_dir);

// The name of the marker file write_restored_logs leaves while it runs.
inline constexpr const char* restoring_marker = "restoring";

}  // namespace weir::replica
