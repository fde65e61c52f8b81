// cluster_cold_snapshots: a cluster lane's restore snapshots (docs/cold-tier.md, "Restore", "A cluster"),
// so that a cluster that loses every disk comes back from the bucket. For each group this node leads,
// every `interval` while the group applied entries since its last one, the group's state is cut at the
// index this node applied last (raft_lane::cut_for_bucket: the data log's segments it references stay
// pinned meanwhile), made self-contained off the loop (streams::inline_snapshot_part: records whose
// bytes are in objects forgotten, the others read from the data log and inlined), put beside the group's
// subscriptions and its part of the cold index (a group snapshot, replica/group_snapshot.h), and
// uploaded as e<epoch>/snap/g<group>/t<term>-s<seq>.snap with the restore header (its lsn: the raft
// index; its term: the key's). Once one lands the group's older snapshots are deleted (the newest one is
// kept: key order is term, then sequence). A restore writes each group's newest one into the node logs
// as an installed raft snapshot (replica/cold_restore.h, write_restored_cluster).
//
// The objects a group's kept snapshot names must stay in the bucket even after the live index dropped
// them (a stream deleted since): names() tells the group's sweep. Until the newest snapshot of a group in
// the bucket is one this node uploaded in its current term (another leader's, or an earlier run's, may
// name anything), names() is true for every key of the group.
//
// One group at a time: a pass takes the groups due in turn. A cut larger than one PUT (the bytes not yet
// in objects are inlined) is uploaded in parts, its head last; the build gives up once the records it
// reads pass `max_bytes` (it is all in memory), and the stats say why.
//
// Lives on the lane's executor: every method runs there, and so do the io's completions.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/string_map.h"
#include "raft/executor.h"
#include "replica/cold_snapshots.h"
#include "tier/object_key.h"

namespace weir::replica {

class raft_lane;

struct cluster_cold_snapshot_options {
  tier::cold_epoch epoch{1};
  std::uint32_t groups = 0;  // the cluster's group count: a restore needs a snapshot of each
  std::chrono::milliseconds interval{10'000};
  std::uint64_t max_bytes = max_restore_snapshot_bytes;
  std::uint64_t part_bytes = tier::object_store::max_object_bytes;
};

class cluster_cold_snapshots {
 public:
  cluster_cold_snapshots(raft_lane& lane, cluster_cold_snapshot_options o, cold_snapshot_io io);
  ~cluster_cold_snapshots();
  cluster_cold_snapshots(const cluster_cold_snapshots&) = delete;
  cluster_cold_snapshots& operator=(const cluster_cold_snapshots&) = delete;

  void start();
  // No more cuts, uploads or deletes (one in flight may land).
  void stop();
  // A pass now unless one is under way (tests; the timer runs them otherwise).
  void take();
  const cold_snapshot_stats& stats() const { return stats_; }
  // Whether a kept (or uploading) snapshot of `group` may name the object `key`.
  bool names(std::uint32_t group, std::string_view key) const;

 private:
  void arm();
  // The next group due from `from` on (this node leads it and it applied entries since its last
  // snapshot), or none.
  std::optional<std::uint32_t> next_due(std::uint32_t from) const;
  void snapshot_group(std::uint32_t group);
  void uploaded(std::uint32_t group, std::uint64_t index, std::int64_t taken_ms, std::uint64_t size,
                std::uint64_t parts);
  void prune(std::uint32_t group);
  void fail(std::uint32_t group, std::string why);
  // The pass goes on with the groups after `group`.
  void next(std::uint32_t group);

  raft_lane& lane_;
  raft::executor& ex_;
  cluster_cold_snapshot_options o_;
  cold_snapshot_io io_;
  bool busy_ = false;
  bool stopped_ = false;
  raft::executor::timer_id timer_ = 0;
  std::map<std::uint32_t, std::uint64_t> last_index_;                     // by group: its last upload's
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> seq_;  // by (group, term): next seq
  // By group: the object keys each of this node's uploading or kept snapshots names, by snapshot key,
  // and the term of the group's newest snapshot in the bucket when it is one of them (0 otherwise):
  // names() is exact while this node leads the group in that term.
  std::map<std::uint32_t, std::map<std::string, string_set>> named_;
  std::map<std::uint32_t, std::uint64_t> own_newest_term_;
  cold_snapshot_stats stats_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace weir::replica
