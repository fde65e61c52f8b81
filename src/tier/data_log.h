// data_log: where a cluster node keeps its stream data on disk, so that the hot tier can drop it from
// memory (docs/replication.md, "Stream data on a cluster node").
//
// In a cluster the raft node log is the write-ahead log: a command is durable (on a quorum) before any
// node applies it, and nothing waits for the data log. The data log is a second, local log
// (storage::log_writer in <data-dir>/data, sync mode `never`) that each node writes, as it applies them,
// the committed commands that carry stream bytes (appends, creates with initial data). Its records are
// the same command records as a single node's write-ahead log, so a disk_location (segment, offset,
// data_offset) means the same thing and hot_tier / segment_reader read them unchanged.
//
// A record goes through four stages:
//   queued     applied, not yet handed to the writer (below);
//   written    its append completed: its place is set on the state machine (hooks::locate);
//   synced     a sync of the data log that began after it completed: it is admitted to the hot tier
//              (hooks::admit), which may then evict it, and durable() is true for its place (what a
//              raft snapshot may reference instead of inlining the bytes);
//   reclaimed  its segment is deleted once neither the state (hooks::referenced) nor a group's latest
//              snapshot (pin) references it: a checkpoint with an empty blob, which deletes the segments
//              it covers except those it is told to keep.
// The log is synced once the oldest record not synced is sync_interval_ms old, and at once when more than
// sync_bytes are written and not synced. A record whose write fails stays in memory (unlocated) and is
// logged.
//
// The log is never replayed: at start its tail is recovered (a torn tail cut) and writing continues
// after it. The state comes from raft (snapshot and entries); appends raft replays are written again,
// and the older copies become garbage that the next reclaim deletes.
//
// Records are queued and handed to the writer together (data_log_options::hand_over_bytes): once that
// many bytes are queued, at each tick and before a sync; or, with 0, at the end of each loop turn (a
// task posted by the turn's first write). Waking the writer's thread for each applied entry was the
// largest single cost of an append on a cluster node (docs/benchmarks.md, "Cluster write path: data-log
// hand-over batching"); nobody waits for these writes (raft made the command durable), so they may wait
// for a batch.
//
// Lives on its shard's loop (its lane's): every method runs there; the writer's completions are posted there.
// Its disk work runs on the writer's threads, or as tasks of a storage::disk_worker given to open() (the
// simulation's, on its scheduler: then the whole log is deterministic).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "storage/env.h"
#include "storage/log_writer.h"
#include "storage/segment_reader.h"
#include "streams/command.h"
#include "streams/types.h"

namespace weir::tier {

struct data_log_options {
  std::uint32_t core = 0;  // disk_location::core of its records (the hot tier's reader)
  std::uint64_t segment_bytes = 128ull << 20;
  std::int64_t sync_interval_ms = 1000;
  std::uint64_t sync_bytes = 8ull << 20;      // written, not synced: sync without waiting for the interval
  std::uint64_t reclaim_bytes = 64ull << 20;  // written since the last reclaim: reclaim at the next sync
  std::int64_t reclaim_interval_ms = 30'000;  // or this long after it, if anything changed
  // Records queued for the writer are handed over once this many bytes are queued, at each tick and
  // before a sync. 0: at the end of each loop turn (the server uses a 64 KiB batch: docs/benchmarks.md,
  // "Cluster write path: data-log hand-over batching").
  std::uint64_t hand_over_bytes = 0;
};

struct data_log_stats {
  std::uint64_t records = 0;  // records written (appends completed)
  std::uint64_t bytes = 0;    // their stream bytes
  std::uint64_t syncs = 0;    // syncs completed
  std::uint64_t unsynced_bytes = 0;
  std::uint64_t reclaims = 0;  // reclaims completed
  std::uint64_t segments_removed = 0;
  std::uint64_t write_failures = 0;
  storage::log_stats log;  // the writer's (segments and bytes on disk)
};

class data_log {
 public:
  // What the data log asks of the state it serves (the shard's state machine and hot tier).
  struct hooks {
    // The record of stream incarnation `generation` ending at `end` is written at `at`: record its
    // place (false: no such record any more).
    std::function<bool(std::uint64_t generation, std::uint64_t end, const streams::disk_location& at)> locate;
    // That record is synced: it may leave memory (hot_tier::admit).
    std::function<void(std::uint64_t generation, std::uint64_t end, std::uint32_t size,
                       const streams::disk_location& at)>
        admit;
    // The segments the state's records point at (state_machine::referenced_segments).
    std::function<std::vector<std::uint64_t>()> referenced;
  };

  // Recovers the log's tail in `dir` (records are not read back) and opens it for appending. `reader`
  // (may be null) is the hot tier's reader of `dir`: reclaimed segments are forgotten there. `worker`:
  // where the writer's disk work runs (storage::disk_worker; null: the writer's own threads, as in
  // production; the simulation runs it on its scheduler). Blocking: call at start-up.
  static result<std::unique_ptr<data_log>> open(storage::env& e, const std::string& dir, data_log_options o,
                                                storage::executor exec, storage::segment_reader* reader,
                                                hooks h, storage::disk_worker* worker = nullptr);
  ~data_log();
  data_log(const data_log&) = delete;
  data_log& operator=(const data_log&) = delete;

  // Writes `c`'s record if it carries stream bytes: the record of `generation` ending at `end` (the
  // command's outcome). Returns at once.
  void write(const streams::command& c, std::uint64_t generation, std::uint64_t end);
  // Writes a record that is in memory with no place on disk (one restored from a snapshot with its
  // bytes inlined), as an append of its bytes to `path`.
  void write_record(std::string_view path, std::uint64_t generation, const streams::record& r);

  // Snapshot transfers (server/snapshot_transfer.h): writes `bytes`, a record a peer's snapshot
  // references, as an append record of its own and calls `done` (on this loop, never inside) with its
  // place here (data_offset set, the bytes start there) or the write's error. The record's segment is
  // pinned under `transfer` (every reclaim keeps it) from the moment its place is known until
  // unpin_transfer(transfer): the restore of the snapshot pins it for the group before that.
  using raw_done = std::function<void(result<streams::disk_location>)>;
  void write_raw(std::uint64_t transfer, std::string bytes, raw_done done);
  void unpin_transfer(std::uint64_t transfer);
  // `fn` once a completed sync covers `at` (a place in this log): at once (posted) when it does already.
  // Starts a sync when needed. Dropped, not called, when the log is destroyed first.
  void when_durable(const streams::disk_location& at, std::function<void()> fn);

  // Syncs or reclaims when due (the shard calls it a few times a second).
  void tick(std::int64_t now_ms);
  // The state let go of records (the cold tier forgot them: their bytes are in objects): reclaim at the
  // next tick, whatever was written since the last.
  void request_reclaim() { reclaim_requested_ = true; }
  // Unless a sync runs: hands the queued records to the writer, then starts a sync (unless nothing was
  // written since the last; the records just handed over wait for the next one).
  void sync_now();

  // `at` (a place in this log) was synced: what a snapshot may reference instead of inlining its bytes.
  bool durable(const streams::disk_location& at) const;
  // The segments group `group`'s latest snapshot references (replaces the group's previous set): kept
  // by every reclaim.
  void pin(std::uint32_t group, std::vector<std::uint64_t> segments);

  data_log_stats stats() const;
  // Stream bytes applied and not synced yet (queued or written).
  std::uint64_t unsynced_bytes() const { return unsynced_bytes_ + queued_size_; }

 private:
  data_log(storage::env& e, std::string dir, data_log_options o, storage::segment_reader* reader, hooks h);

  struct written {
    std::uint64_t generation;  // 0: a transferred record (write_raw), which the state does not hold yet
    std::uint64_t end;
    std::uint32_t size;
    streams::disk_location at;
  };
  void fire_durable_waiters();
  // Queues scratch_ (a record of `size` stream bytes starting at data_offset) for the next hand-over.
  void append(std::uint64_t generation, std::uint64_t end, std::uint32_t size, std::uint32_t data_offset);
  // Hands the queued records to the writer, in the order they were written.
  void hand_over();
  streams::disk_location counted(const storage::append_ack& a, std::uint32_t size, std::uint32_t data_offset);
  void on_written(const result<storage::append_ack>& r, std::uint64_t generation, std::uint64_t end,
                  std::uint32_t size, std::uint32_t data_offset);
  void on_synced(const status& st, std::size_t count);
  void reclaim(std::int64_t now_ms);

  storage::env& env_;
  std::string dir_;
  data_log_options opts_;
  storage::segment_reader* reader_;
  hooks hooks_;
  storage::executor exec_;  // posts to this log's loop
  std::unique_ptr<storage::log_writer> writer_;
  std::string scratch_;
  // Records not yet handed to the writer: their encodings back to back in queued_bytes_.
  struct queued {
    std::size_t offset;  // in queued_bytes_
    std::size_t length;
    std::uint64_t generation;
    std::uint64_t end;
    std::uint32_t size;
    std::uint32_t data_offset;
  };
  // With hand_over_bytes 0, a turn's records beyond this go at once (no second copy of large ones).
  static constexpr std::size_t turn_hand_over_bytes = 1u << 20;
  std::string queued_bytes_;
  std::vector<queued> queued_;
  std::uint64_t queued_size_ = 0;  // their stream bytes
  bool hand_over_posted_ = false;
  std::deque<written> unsynced_;  // written, in log order, not yet covered by a completed sync
  // The newest place of each record of unsynced_ (generation, end): the copy a sync admits.
  std::map<std::pair<std::uint64_t, std::uint64_t>, streams::disk_location> newest_;
  std::uint64_t unsynced_bytes_ = 0;
  bool syncing_ = false;
  std::int64_t oldest_unsynced_ms_ = 0;  // when the oldest record of unsynced_ was written (tick time)
  // Everything before this place is synced (segment, offset): durable().
  std::uint64_t durable_segment_ = 0;
  std::uint64_t durable_offset_ = 0;
  storage::lsn last_lsn_{0};  // the newest record written
  bool reclaiming_ = false;
  std::uint64_t bytes_since_reclaim_ = 0;
  bool pins_changed_ = false;
  bool reclaim_requested_ = false;
  std::int64_t last_reclaim_ms_ = 0;
  std::int64_t now_ms_ = 0;  // as of the last tick
  std::map<std::uint32_t, std::vector<std::uint64_t>> pins_;
  std::map<std::uint64_t, std::set<std::uint64_t>> transfer_pins_;  // write_raw's, by transfer
  std::vector<std::pair<streams::disk_location, std::function<void()>>> durable_waiters_;
  data_log_stats stats_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace weir::tier
