// cold_snapshots: a single node shard's restore snapshots (docs/cold-tier.md, "Restore"). Every
// `interval` while its log has grown, the shard's state is cut as a checkpoint is (checkpointer::
// snapshot_for_bucket: no command in flight, so the cut holds no write that may still fail), and off the
// loop the cut is made self-contained: the records whose bytes are in objects are forgotten (the same
// streams a reclaim may forget: streams without forks) and every other record's bytes are read from
// the log's segments and inlined (streams::inline_snapshot). The result, with the cold index, goes to the
// bucket as one object (tier/restore_snapshot.h) under e<epoch>/snap/g<group>/t<term>-s<seq>.snap. Once
// one lands, the group's older snapshots beyond the newest `keep` (one) are deleted.
//
// The objects a kept snapshot's index names must stay in the bucket even after the live index dropped
// them (a stream deleted since): names() says so to the orphan sweep. Until this run's own snapshots are
// the only ones kept, an older run's may name anything, so names() is true for every key.
//
// A snapshot holds the bytes not yet in objects, so it grows while uploads lag (the bucket down). One
// larger than one PUT is uploaded in parts (tier/restore_snapshot.h), its head last; beyond `max_bytes`
// (it is built in memory) none is taken until the uploads catch up, and the stats say why.
//
// Lives on the partition's executor: every method runs there, and so do the io's completions.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "base/string_map.h"
#include "replica/cold_sweeper.h"
#include "replica/partition.h"
#include "tier/object_key.h"
#include "tier/object_store.h"
#include "tier/restore_snapshot.h"
#include "tier/uploader.h"

namespace weir::replica {

// The largest restore snapshot taken (all its parts): it is built in memory, so while more bytes than
// this are not yet in objects, the restore point waits for the uploads.
inline constexpr std::uint64_t max_restore_snapshot_bytes = 512ull << 20;

struct cold_snapshot_options {
  tier::cold_epoch epoch{1};
  tier::cold_group group{0};
  std::uint32_t groups = 1;  // the node's shard count: a restore needs a snapshot of each
  tier::leader_term term{0};
  std::chrono::milliseconds interval{10'000};
  // Snapshots kept per group; older ones are deleted once a newer one has landed, so the bucket always
  // holds a complete one. A restore reads the newest only, so one is enough: a deleted stream's objects
  // are then named only until the first snapshot after the delete lands.
  std::size_t keep = 1;
  std::uint64_t max_bytes = max_restore_snapshot_bytes;
  std::uint64_t part_bytes = tier::object_store::max_object_bytes;  // the largest object of a snapshot
};

// How the snapshots reach their threads and the bucket; every completion runs on the partition's
// executor.
struct cold_snapshot_io {
  using built = result<tier::restore_snapshot_objects>;
  // Runs `job` off the loop (it reads local segment files), then `done` with its result on the loop.
  std::function<void(std::function<built()> job, std::function<void(built)> done)> off_loop;
  tier::uploader::put_fn put;
  cold_sweeper_options::list_fn list;  // the same calls as the sweeper's
  cold_sweeper_options::remove_fn remove;
};

// What makes a cut self-contained off the loop (here and in cluster_cold_snapshots.h): the records of
// `forget`'s streams up to their cold ends are forgotten (their bytes are in objects), and the other
// records on disk are read from `readers` and inlined. Taken on the loop (from), used on a worker.
struct cut_inlining {
  std::unordered_map<std::string, streams::stream_offset> forget;
  std::vector<storage::segment_reader*> readers;

  // The partition's forgettable streams that `keep` accepts (null: all), and its segment readers.
  static cut_inlining from(partition& p, const std::function<bool(const std::string&)>& keep = {});
  std::optional<streams::stream_offset> forget_before(const std::string& path) const;
  result<streams::chunk> read(const streams::part_reference& r) const;
  // read(), until the bytes read reach `max_bytes`: then cold_backlogged, so that a snapshot too large
  // to take is given up before it is all in memory (one copy, and its reader, per build).
  std::function<result<streams::chunk>(const streams::part_reference&)> bounded_reader(
      std::uint64_t max_bytes) const;
};

// The restore snapshot objects of `state` (tier/restore_snapshot.h: one, or a head and parts of at most
// `part_bytes`), or cold_backlogged when they would be larger than `max_bytes` (the bytes not yet in
// objects are in them).
cold_snapshot_io::built restore_snapshot_objects(const tier::restore_snapshot_header& h,
                                                 std::span<const std::byte> state, std::uint64_t max_bytes,
                                                 std::uint64_t part_bytes);

// Puts a snapshot's parts one after the other, then its head, so that a head in the bucket means a
// whole snapshot. `done` gets the first failure (its key and the store's error) or "" once the head has
// landed; while `live` says false it stops between puts and calls nothing. The parts of a failed upload
// are left to the next prune (prune_snapshot_keys).
void put_restore_snapshot(const tier::uploader::put_fn& put, const tier::object_name& name,
                          tier::restore_snapshot_objects objects, std::function<bool()> live,
                          std::function<void(std::string failure)> done);

// Of one group's snapshot keys in the bucket (heads and parts, any order), the heads to keep (the newest
// `keep`, oldest first) and the keys to delete: older heads, and parts of snapshots older than the
// oldest kept head (a newer part may be an upload under way). Foreign keys are neither.
struct snapshot_pruning {
  std::vector<std::string> kept;
  std::vector<std::string> drop;
};
snapshot_pruning prune_snapshot_keys(std::vector<std::string> keys, std::size_t keep);

struct cold_snapshot_stats {
  std::uint64_t uploaded = 0;
  std::uint64_t failed = 0;        // cuts that could not be built or uploaded (tried again next interval)
  std::uint64_t too_large = 0;     // cuts over max_bytes (uploads lag)
  std::uint64_t deleted = 0;       // older snapshots deleted
  std::uint64_t last_bytes = 0;    // all its objects
  std::uint64_t last_parts = 0;    // 0: one object
  std::uint64_t last_lsn = 0;      // the log position of the last snapshot uploaded
  std::int64_t last_taken_ms = 0;  // its wall-clock time
  std::string last_error;          // "" once a snapshot lands after it

  // A snapshot of `bytes` in `parts` (0: one object), cut at `lsn` at `taken_ms`, has landed.
  void landed(std::uint64_t bytes, std::uint64_t parts, std::uint64_t lsn, std::int64_t taken_ms) {
    ++uploaded;
    last_bytes = bytes;
    last_parts = parts;
    last_lsn = lsn;
    last_taken_ms = taken_ms;
    last_error.clear();
  }
};

class cold_snapshots {
 public:
  cold_snapshots(partition& p, cold_snapshot_options o, cold_snapshot_io io);
  ~cold_snapshots();
  cold_snapshots(const cold_snapshots&) = delete;
  cold_snapshots& operator=(const cold_snapshots&) = delete;

  void start();
  // No more cuts, uploads or deletes (one in flight may land: an older run's snapshot for the next run).
  void stop();
  // Takes a snapshot now unless one is under way (tests; the timer does it otherwise).
  void take();

  // A cut is being made self-contained or uploaded: its records must stay readable on disk, so the
  // mover forgets nothing meanwhile.
  bool busy() const { return busy_; }
  // Whether a kept (or uploading) snapshot may name the object `key`.
  bool names(std::string_view key) const;
  const cold_snapshot_stats& stats() const { return stats_; }

 private:
  void arm();
  void on_cut(storage::lsn covered, std::vector<std::byte> blob);
  void on_built(std::uint64_t lsn, std::int64_t taken_ms, cold_snapshot_io::built b, string_set keys);
  void fail(std::string why);
  // Lists the group's snapshots and deletes all but the newest `keep`.
  void prune(std::string continuation, std::vector<std::string> seen);

  partition& part_;
  cold_snapshot_options o_;
  cold_snapshot_io io_;
  std::uint64_t next_seq_ = 0;
  bool busy_ = false;
  bool stopped_ = false;
  bool own_only_ = false;  // the kept snapshots are all this run's (names() is exact)
  raft::executor::timer_id timer_ = 0;
  std::uint64_t last_cut_lsn_ = 0;
  // The object keys each of this run's kept or uploading snapshots names, by snapshot key.
  std::map<std::string, string_set> named_;
  cold_snapshot_stats stats_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace weir::replica
