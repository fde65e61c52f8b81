// log_writer: one core's write-ahead log with group commit.
//
// Threads. append() and checkpoint() are called from the owning core's event loop (they are thread-safe,
// so a benchmark or test may call them from anywhere); they only copy the record into the pending batch
// and never touch the disk, except a lone writer's append in `always` mode, which the calling thread
// writes and syncs itself when the sync thread is idle (log_options::inline_after). A dedicated sync thread,
// owned by the writer, takes everything pending as one batch, gives the records their lsns and CRCs, writes
// the batch with one write per segment touched and (in `always` mode) one fdatasync, then hands all the
// batch's completions back in a single call of the caller's executor (the server passes
// io::event_loop::post). While one fdatasync is in flight, new appends queue up for the next batch.
//
// Durability: in `always` mode an append completes successfully only after its record is on disk. In
// `interval:MS` and `never` modes it completes after the write() reached the page cache (survives a
// process crash, not a power loss); `interval` syncs every MS milliseconds, on a second thread (the
// flusher), so that the batches written meanwhile never wait for that fdatasync (it takes 60-110 ms
// on a busy device: done inline it stalled every append for that long). In those modes sync() asks the
// flusher for an fdatasync and reports when the records appended before it are durable.
//
// Failures. A batch that fails to write or sync (ENOSPC, EIO) is undone: the files are cut back to where
// the batch began (and that cut synced), lsns are handed out again, every append of the batch completes
// with the error, and the writer goes on serving the next batch (so service resumes when space returns).
// If the undo itself fails, the writer is poisoned: the batch's appends complete with errc::poisoned
// (outcome unknown: they may or may not survive a crash) and every later append fails with errc::poisoned
// (not written) until the process restarts and recovery runs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "base/metrics.h"
#include "storage/env.h"
#include "storage/log_recovery.h"
#include "storage/segment_spares.h"

namespace weir::storage {

enum class sync_mode { always, interval, never };

struct sync_policy {
  sync_mode mode = sync_mode::always;
  std::chrono::milliseconds interval{0};  // for sync_mode::interval
};

// "always" | "interval:MS" | "never" (the --fsync / config value).
result<sync_policy> parse_sync_policy(std::string_view text);

struct log_options {
  std::uint64_t segment_bytes = 128ull << 20;  // roll to a new segment once a segment reaches this size
  sync_policy sync;
  // In `always` mode, after a batch the sync thread waits up to this long for the loop to run the batch's
  // completions (whose callbacks typically append again: the next request of the same connection) so
  // that they join the next batch instead of the one after. 0: take the next batch at once.
  std::chrono::microseconds linger{1000};
  // In `always` mode, once a batch's completions ran, wait up to this long (and at most as long as that
  // batch took to write and sync) for the writers it answered to send their next appends, so that they
  // join the appends that came in meanwhile in one batch. Without it a closed loop of N writers splits
  // into two cohorts that alternate, each with its own fdatasync. Ends early once they are all in.
  // 0: take the next batch at once (the default until it is measured on a quiet machine:
  // docs/benchmarks.md).
  std::chrono::microseconds gather{0};
  // After a batch failed (and was undone), fail every later append too, without writing it, until
  // resume(): the caller applied those commands on top of the failed ones, so they must not reach the
  // log either. The caller rebuilds its state from the log, then resumes. false: the next batch is
  // written as usual.
  bool fence_after_failure = false;
  // In `interval` and `never` modes, reserve each segment's disk blocks (up to segment_bytes) when it
  // becomes the active one (writable_file::preallocate), so that appends never allocate blocks: in
  // interval mode a write that allocated waited for the flusher's fdatasync, which holds ext4's block-map
  // lock while it allocates (docs/storage.md, "Preallocation"). The file's size stays what was written.
  // Not in `always` mode: there no sync runs beside the writes, so it could only cost.
  bool preallocate = true;
  // In `always` mode, after a small batch (at most 4 records: a few writers, not a crowd) the sync thread
  // polls this long for the next append before it sleeps on the condition variable, and after a batch of
  // one record it skips the linger, so that a lone writer's next append costs no thread wake-up. Big
  // batches never spin. Off by default: on this 2-CPU VM it cut the p50 of the software path of a
  // 1-connection append (data on tmpfs) but showed no gain on the disk, within the noise, while the
  // polling raised the server's CPU per append by ~60% and the tmpfs p99 4x (it competes with the loop
  // and the client for two CPUs; docs/benchmarks.md, "Redis: the load generator and interval-mode
  // stalls"). 0: sleep at once.
  std::chrono::microseconds idle_spin{0};
  // In `always` mode, an append whose caller says it is a lone writer (append's `lone`: nothing else of
  // its in flight) is written and fdatasynced on the calling thread itself, without the two thread
  // wake-ups of the hand-over to the sync thread and back, when the sync thread is idle (nothing pending,
  // no batch or checkpoint being written) and the last `inline_after` batches held one record each. Its
  // completion is still posted through the executor (on the server: to the same loop, which needs no
  // wake-up). The caller's thread blocks for the fdatasync, as Redis's event loop does. 0: never inline
  // (docs/storage.md, "Inline appends"; the measurements: docs/benchmarks.md, "Redis: one connection,
  // thread hand-offs and inline appends").
  unsigned inline_after = 2;
  // Larger records never go inline: their write would hold the caller's thread (the event loop) for
  // longer than a sync.
  std::size_t inline_max_bytes = 64 << 10;
  // In `always` mode, each next segment is a file of zeros prepared ahead of time on a thread of its own
  // (segment_spares) and written over from its first byte: an fdatasync then has no metadata to commit
  // (no block allocated, no new file length) and skips ext4's journal. The writer rolls onto a ready
  // spare as soon as the active segment's prepared zeros would not hold the next batch (or the active
  // segment was not prepared: the first one, or the one recovery reopened), and cuts the unused zeros of
  // the segment it leaves. The first spare holds prepared_first_bytes, each next one twice as much, up
  // to segment_bytes (docs/storage.md, "Prepared segments"). false: segments grow as they are written
  // (the default here, so that tests of other behaviour write no zeros; the server turns it on).
  bool prepare_segments = false;
  std::uint64_t prepared_first_bytes = 1ull << 20;
  // The pace at which spares are written (0: unpaced). The zeros cost the disk as much as the data that
  // later goes over them, while what they save is per fdatasync: a lone writer's thousands of small
  // syncs a second gain much, a crowd's few large group commits little (unpaced, at 64 connections they
  // raised the append p99; docs/benchmarks.md, "Redis: prepared segments close the 1-connection gap").
  // A writer faster than this pace grows its segment past the prepared zeros until the next spare is
  // ready.
  std::uint64_t prepared_bytes_per_second = 8ull << 20;
};

struct append_ack {
  lsn seq;
  log_position pos;  // where the record's header starts; the payload follows format::record_header_size on
};

using append_callback = std::function<void(result<append_ack>)>;
// A checkpoint's outcome: the ids of the segments it reclaimed (possibly none), or why it was not written.
using checkpoint_callback = std::function<void(result<std::vector<segment_id>>)>;
// A requested sync's outcome: ok once every record appended before the request is durable.
using sync_callback = std::function<void(status)>;
// Runs a completion on the caller's thread (io::event_loop::post in the server).
using executor = std::function<void(std::function<void()>)>;

// Where a log_writer's disk work runs. By default (no worker) on threads the writer owns: its sync
// thread, and in `interval` and `never` modes its flusher. A disk_worker runs that work as tasks
// instead: the writer hands it one task per piece of work (take the pending batch and write it with its
// syncs and checkpoints; one requested fdatasync), and the worker runs them later, in the order handed
// over, never inside run(). The simulation's worker runs them on its executor after a chosen disk
// latency, so that a seed replays (raft::log_flusher is the node log's equivalent). With a worker the
// writer is single-threaded: append(), sync() and checkpoint() must come from the thread the worker
// runs its tasks on; nothing goes inline, there is no linger, gather or idle spin, and `interval` mode's
// periodic sync happens only at a batch. The worker outlives the writer.
class disk_worker {
 public:
  virtual ~disk_worker() = default;
  virtual void run(std::function<void()> work) = 0;
};

struct log_stats {
  std::uint64_t records = 0;                // records written successfully
  std::uint64_t batches = 0;                // batches written successfully
  std::uint64_t syncs = 0;                  // fdatasync calls on segment files
  std::uint64_t failed_batches = 0;         // batches undone after an error
  std::uint64_t failed_periodic_syncs = 0;  // interval mode: background fdatasyncs that failed
  std::uint64_t inline_batches = 0;         // batches written on the appending thread (inline_after)
  std::uint64_t prepared_segments = 0;      // rolls onto a prepared segment (prepare_segments)
  std::uint64_t segments = 0;               // segment files on disk (as of the last batch or reclaim)
  std::uint64_t segment_bytes = 0;          // their bytes
  metrics::histogram_counts sync_us;        // fdatasync durations (metrics::latency_us_bounds)
  metrics::histogram_counts batch_records;  // records per batch written (metrics::count_bounds)
  metrics::histogram_counts batch_bytes;    // bytes per batch written (metrics::byte_bounds)
};

class log_writer {
 public:
  // Opens the log for appending where recovery left it. `rec` must come from recover_log() on `dir`.
  // Blocking (it may create the first segment): call at start-up. `worker`: where the disk work runs
  // (disk_worker; null: the writer's own threads).
  static result<std::unique_ptr<log_writer>> open(env& e, std::string dir, log_options opts,
                                                  const recovered_log& rec, executor exec,
                                                  disk_worker* worker = nullptr);
  // Writes and completes everything appended so far, then stops the sync thread (with a disk_worker:
  // does that work itself, at once; the tasks it handed over and that have not run yet do nothing).
  ~log_writer();
  log_writer(const log_writer&) = delete;
  log_writer& operator=(const log_writer&) = delete;

  // Queues one record (one command). `done` runs through the executor once the record's batch is durable
  // (or failed). type must be 1..255; payload at most format::max_record_payload bytes. `lone`: the caller
  // has nothing else in flight on this log (log_options::inline_after: such an append may be written and
  // synced on the calling thread, which then blocks for the fdatasync).
  void append(std::uint8_t type, std::span<const std::byte> payload, append_callback done, bool lone = false);

  // Writes a checkpoint covering lsn `covered` (its records must have been appended), then, once it is
  // durable, deletes every segment wholly covered by it (last <= covered) except the active one and those
  // in `keep` (segments live data still points at: the cold store reads them by log_position). Runs on
  // the sync thread, after the batches queued before it. `done` gets the ids removed, in no particular
  // order; the caller drops them from its segment_readers (segment_reader::forget). A segment that fails
  // to be removed is logged and tried again at the next checkpoint: that never fails the checkpoint.
  void checkpoint(lsn covered, std::vector<std::byte> blob, std::vector<segment_id> keep,
                  checkpoint_callback done);

  // Makes every record appended before this call durable (fdatasync), then runs `done` through the
  // executor with the outcome. Never blocks the caller: it is queued like an append, and the fdatasync
  // runs on the flusher thread (interval and never modes), so appends made meanwhile are written and
  // complete without waiting for it. In `always` mode those records are durable once their batch is
  // written, so it completes right after them. For a user of `interval:MS` / `never` that must know which
  // records are on disk: the appends that completed before sync() was called are, once `done` gets ok.
  // Records whose append failed are not covered (they are not in the log). A failed fdatasync completes
  // with the error and poisons the log (errc::poisoned for later appends), as a failed periodic sync does.
  void sync(sync_callback done);

  log_stats stats() const;
  // Nothing is queued and the sync thread is not writing: a lone append now may go inline (for tests).
  bool idle() const;
  // Blocks until a prepared segment is ready for the next roll (for tests); false if prepare_segments is
  // off (or not in `always` mode), the preparation failed, or none was ready within `limit`.
  bool wait_for_prepared_segment(std::chrono::milliseconds limit = std::chrono::seconds(20));

  // Ends the fence a failed batch raised (log_options::fence_after_failure). Call it only while no
  // append is pending (every append made so far has completed); appends made after it are written.
  void resume();

 private:
  struct pending_record {
    std::size_t offset;  // in the batch buffer
    std::size_t size;    // header + payload
    append_callback done;
  };
  struct pending_checkpoint {
    lsn covered;
    std::vector<std::byte> blob;
    std::vector<segment_id> keep;
    checkpoint_callback done;
  };
  struct batch {
    std::vector<std::byte> bytes;
    std::vector<pending_record> records;
    std::vector<pending_checkpoint> checkpoints;
    std::vector<sync_callback> syncs;
  };

  log_writer(env& e, std::string dir, log_options opts, executor exec, disk_worker* worker);

  static constexpr std::size_t spin_batch_max = 4;  // log_options::idle_spin: batches this small spin

  // The inline path of append(): called with mu_ held; returns false (mu_ still held) if the record must
  // go to the sync thread, else writes it with write_mu_ and returns true (mu_ released).
  bool try_write_inline(std::unique_lock<std::mutex>& lock, std::uint8_t type,
                        std::span<const std::byte> payload, append_callback& done);

  // Whoever holds write_mu_ (the sync thread, or append()'s inline path), from here on.
  void run();
  // Takes everything pending and writes it (a batch, its syncs and checkpoints): one turn of run(), after
  // its waits. Called with `lock` (mu_) held; returns with it held.
  void write_pending(std::unique_lock<std::mutex>& lock, std::size_t& answered,
                     std::chrono::microseconds& last_batch_time);
  // The writer's stop: the pending work written, unsynced bytes synced, prepared zeros cut.
  void finish_stop();
  // Work was queued (mu_ held by the caller): with a disk_worker, hands it a turn of write_pending
  // (unless one is handed over already).
  void hand_to_worker();
  // A background fdatasync was requested (flusher_.file set): wakes the flusher, or hands it to the worker.
  void wake_flusher();
  // With flusher_.mu held (by `lock`) and a file requested: syncs it, completes its waiters.
  void sync_requested(std::unique_lock<std::mutex>& lock);
  void write_batch(batch& b);
  // Interval / never modes: a failed background fdatasync poisons the log (checked before each batch and
  // each sync request).
  void poison_after_background_failure();
  status roll(std::vector<std::shared_ptr<writable_file>>& retired);
  // log_options::preallocate: reserves the active segment's blocks up to segment_bytes (a hint: a failure
  // is logged once and changes nothing else).
  void preallocate_active();
  // log_options::prepare_segments: a batch of `bytes` should go to a prepared segment (one is ready, and
  // the active one has records and is not prepared or has no room left for them).
  bool wants_prepared_segment(std::size_t bytes) const;
  // Cuts the active segment's unused prepared zeros (before a roll, and at a clean stop), durably.
  status trim_active();
  // Returns the error to complete the batch's appends with: `cause`, or errc::poisoned if the undo failed.
  error undo(const error& cause, segment_id start_segment, std::uint64_t start_size, lsn start_lsn,
             std::vector<std::shared_ptr<writable_file>>& retired);
  status sync_active();
  void periodic_sync();
  // Interval mode: hands the active segment to the flusher thread (unless its previous sync still runs).
  void request_background_sync();
  // sync() requests: completed at once in `always` mode, else handed to the flusher with the active segment.
  void handle_syncs(std::vector<sync_callback>& syncs);
  void flusher_run();
  void do_checkpoint(pending_checkpoint& c);
  std::vector<segment_id> reclaim(lsn covered, const std::vector<segment_id>& keep);
  std::string segment_path(segment_id id) const;

  env& env_;
  const std::string dir_;
  const log_options opts_;
  const executor exec_;
  disk_worker* const worker_;        // null: the threads below
  bool worker_turn_queued_ = false;  // mu_: a write_pending turn is handed to worker_ and has not run
  // Tasks handed to worker_ find the writer gone through this (they may run after its end).
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);

  // Held by whoever writes a batch, runs a checkpoint or handles sync requests (the sync thread, or an
  // inline append): the file and segment state below is never touched by two threads at once. Lock order:
  // the inline path takes it (try_lock) under mu_; the sync thread takes it without mu_.
  std::mutex write_mu_;
  // Consecutive batches of exactly one record, the last one included (log_options::inline_after).
  std::atomic<unsigned> lone_batches_{0};
  std::vector<std::byte> inline_bytes_;  // the inline path's recycled record buffer (write_mu_)

  // Owned by the writer of a batch (write_mu_; shared with the flusher while it syncs it).
  std::shared_ptr<writable_file> active_;
  // Every segment on disk, in id order (ids may have gaps: reclaimed or kept ones); back() is the active one.
  std::deque<segment_info> segments_;
  lsn next_lsn_{1};
  std::optional<error> poisoned_;
  bool dirty_ = false;               // written but not synced (interval / never modes)
  bool preallocate_failed_ = false;  // logged once
  // log_options::prepare_segments (always mode): the spares, and the length of the active segment's
  // prepared zeros (0: it grows as written; past that length it grows too).
  std::unique_ptr<segment_spares> spares_;
  std::uint64_t active_prepared_ = 0;
  std::chrono::steady_clock::time_point last_sync_;

  // Counts the completion tasks the executor has run (for linger); shared with those tasks, which may
  // outlive the writer.
  struct completion_tracker {
    std::mutex mu;
    std::condition_variable cv;
    std::uint64_t ran = 0;
  };
  std::shared_ptr<completion_tracker> tracker_ = std::make_shared<completion_tracker>();
  std::uint64_t posted_ = 0;  // successful batches whose completions were handed to the executor

  // Shared with append()/checkpoint().
  mutable std::mutex mu_;
  std::condition_variable cv_;
  batch pending_;
  std::vector<std::byte> spare_;  // recycled batch buffer
  bool stop_ = false;
  // append() wakes the sync thread when the pending batch reaches this many records (1, or the size the
  // sync thread gathers for).
  std::size_t wake_at_ = 1;
  std::optional<error> fence_;  // set by a failed batch when fencing; cleared by resume()
  // Set (under mu_) when work is queued, cleared by the sync thread when it takes it: what idle_spin polls
  // without the lock.
  std::atomic<bool> work_posted_{false};
  // The sync thread took a batch (or a checkpoint, or sync requests) and has not finished with it: no
  // append may go inline meanwhile (its records would overtake that batch's).
  bool busy_ = false;

  // The background fdatasync (interval mode's periodic one, and sync() requests in interval and never
  // modes). The file is synced while the sync thread may append to it (env.h allows sync() concurrently
  // with append()).
  struct flusher {
    std::mutex mu;
    std::condition_variable cv;
    std::shared_ptr<writable_file> file;  // requested, not yet taken
    std::vector<sync_callback> waiters;   // sync() requests the requested sync completes
    bool running = false;                 // a sync is running
    bool stop = false;
    std::optional<error> failure;  // a failed background sync: the sync thread poisons the log
  };
  flusher flusher_;

  std::atomic<std::uint64_t> records_{0}, batches_{0}, syncs_{0}, failed_batches_{0},
      failed_periodic_syncs_{0}, inline_batches_{0}, prepared_segments_{0};
  // For stats(): written by the sync thread (sync_us by the flusher thread too), read by any.
  void publish_segments();
  metrics::counter segments_on_disk_, segment_bytes_on_disk_;
  metrics::histogram sync_us_{metrics::latency_us_bounds};
  metrics::histogram batch_records_{metrics::count_bounds};
  metrics::histogram batch_bytes_{metrics::byte_bounds};
  std::thread thread_;
  std::thread flusher_thread_;  // interval and never modes
};

}  // namespace weir::storage
