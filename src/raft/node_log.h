// node_log: the one log a node keeps for all its raft groups (one per core, later), with group commit:
// the entries, terms, votes, truncations and snapshots of every group go into one batch, written and
// synced together; a caller learns through on_synced() which batch became durable. Record format:
// log_record.h and docs/replication-formats.md ("Node log").
//
// On disk the log is a series of segment files, `<path>.00000001`, `<path>.00000002`, ... A segment is
// closed once it holds options::segment_bytes past its preamble; the next batch opens a new one, which begins
// with a preamble: each group's term, vote, next index and latest snapshot before that batch (`state`
// records), so no older segment is needed for those. A segment is deleted once nothing in it is live: every
// entry it holds is dead (cut by a truncate, dropped below a snapshot's trailing window) or was carried
// forward (copied into a newer batch as a `carry` record), and the segments after it begin with preambles.
// Compaction runs when the log's bytes exceed twice its live bytes plus two segments (live: what live_group
// counts): one pass takes the oldest segments, as many as it needs to come back under that bound, carries
// their live entries forward (one batch) and then deletes them, so disk use stays within a small factor of
// the live state plus one segment, whatever the history: a group that never writes again does not pin its
// old segment. The file `<path>` itself, weir's log before segments (version 1), is read as segment 0.
// Memory: no entry bytes are kept (live_group holds runs of indexes); a compaction reads its segments in
// pieces of 1 MiB through one buffer, on the flusher's thread, and keeps their live entries until they are
// encoded into the open batch.
//
// Entry places: once a batch is durable, the log reports where each entry it holds sits (segment, record
// offset, data offset: entry_place), so a reader can serve an entry's bytes from the segment file itself;
// recovery gives the same for the entries it rebuilds (group_state::places). Kept segments: a segment
// compaction is done with that the caller still reads from (set_keep) is renamed to `<path>.kept.NNNNNNNN`
// instead of unlinked; it is no longer part of the raft log (recovery lists but never reads it, and it
// counts neither in disk_bytes() nor for compaction) until drop_kept() unlinks it. A segment number is
// never reused, kept or not: a place names its segment for good.
//
// At open, the segments are scanned in order and each group's state (term, vote, snapshot, entries)
// rebuilt; a group takes its state once, when libraft calls load(). A torn record can only sit at the end
// of the last segment (a crash during a write): it is cut off. Anything else that does not decode is
// corruption, reported with the file and offset. Every open starts a new segment.
//
// Owned by node_io; runs on the node's executor. At most one batch is being flushed at a time; records
// added meanwhile form the next batch, sealed at options::max_batch_bytes (the next one then begins). I/O off
// the executor goes through the log_flusher: the batches, the directory sync after a new segment, the read of
// the segments whose live entries are carried forward, the deletion of segments (unlinks or renames to
// kept, then a directory sync), the unlinks of kept segments, and a roll (cutting the old segment's unused
// prepared zeros, renaming a spare into place or creating the file, writing the new segment's first
// batch). After open, only a spare's hand-over (a mutex) and its request happen on the executor.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "raft/executor.h"
#include "raft/live_state.h"
#include "raft/log_record.h"
#include "raft/types.h"
#include "storage/env.h"
#include "storage/segment_spares.h"

namespace weir::raft {

// Where the node log's disk work runs. Production runs it on a sync thread (thread_flusher); the tests
// and the simulations run it on the executor after a chosen disk latency (tests/support/sim's
// delayed_flusher).
// Jobs run in the order they were handed over.
class log_flusher {
 public:
  virtual ~log_flusher() = default;
  // Writes a batch and makes it durable (append, then fdatasync), then calls `done` on the node's
  // executor. `f` stays open until then.
  virtual void flush(storage::writable_file& f, std::vector<std::byte> bytes,
                     std::function<void(status)> done) = 0;
  // Runs `work` (file-system calls that may block: a directory sync, an unlink, a read of an old
  // segment), then calls `done` with its outcome on the node's executor.
  virtual void run(std::function<status()> work, std::function<void(status)> done) = 0;
};

struct node_log_options {
  // A segment is closed once it holds this many bytes after its preamble (a batch is never split: it
  // may end past this). Counting past the preamble keeps a log whose preamble is large (many groups,
  // big snapshots) from rolling after every batch.
  std::uint64_t segment_bytes = 64u << 20;
  // A batch is sealed once it holds this many bytes (0: never): the records added after it form the next
  // batch, flushed after it. Without a bound, a burst of large entries piles up behind a running flush
  // into one batch of tens of MiB whose write and sync take a second or more, and no entry of it is
  // acknowledged meanwhile: followers answer their leader only after that sync, and a leader that hears
  // from no majority for an election timeout steps down (docs/replication-formats.md, "Node log format").
  std::uint64_t max_batch_bytes = 4u << 20;
  // Prepared segments (docs/replication-formats.md, "Node log format"): each next segment is a file of zeros
  // written and synced ahead on a thread of its own (storage::segment_spares, file `<path>.spare`), renamed
  // into place at a roll and written over from its first byte, so that a batch's fdatasync has no file
  // length to commit (ext4 then skips its journal: 2 device writes per sync instead of 3). The node log
  // rolls early onto a ready spare when the next batch would not fit in its segment's zeros, and cuts a
  // segment's unused zeros (durably) before it leaves it and at a clean close. The server turns it on when
  // the node's fsync is `always`.
  bool prepare_segments = false;
  std::uint64_t prepared_first_bytes = 1u << 20;  // the first spare; each next one twice, up to segment_bytes
  std::uint64_t prepared_bytes_per_second = 8u << 20;  // the zeros' pace (0: unpaced)
  // set_keep's predicate from the start: open() may already compact (and delete) what it recovered.
  std::function<bool(std::uint32_t segment)> keep;
};

class node_log {
 public:
  // Opens the log named `path` through `env` (creating its directory and first segment if missing),
  // recovers every group's state and starts a new segment. Blocking.
  static result<std::unique_ptr<node_log>> open(storage::env& env, log_flusher& flusher, std::string path,
                                                node_log_options opts = {});
  ~node_log();

  // The recovered state of `g` (empty if the log never mentioned it). Callable once per group.
  group_state take_group_state(group_id g);

  // Adds a record to the open batch; returns the number of the batch it will be durable with.
  std::uint64_t add(const record::log_record& r);
  // Starts flushing the open batch if no flush is running (node_io calls this once per loop turn).
  void flush();
  // Called after each flush with the batch number and its outcome. After an error the log is poisoned:
  // every later batch fails too.
  void set_on_synced(std::function<void(std::uint64_t batch, status)> fn) { on_synced_ = std::move(fn); }
  // Called for every entry of every `entries` and `carry` record once the batch holding it is durable,
  // before on_synced() of that batch, in the order the records were added: where its bytes sit. A later
  // write of the same index (after a truncate, or a carry) is reported again; the newest report wins.
  // Nothing is reported for a batch that failed. Set it before the first add(): records added while it
  // is unset are never reported.
  void set_on_placed(std::function<void(group_id, log_index, const entry_place&)> fn) {
    on_placed_ = std::move(fn);
  }

  // Highest batch known durable; the open batch's number.
  std::uint64_t synced_batch() const { return synced_; }
  std::uint64_t open_batch() const { return open_; }
  bool flushing() const { return flushing_; }
  // The batch being flushed (meaningful while flushing()).
  std::uint64_t flushing_batch() const { return started_; }
  bool has_pending() const { return !pending_.empty() || !sealed_.empty(); }

  std::uint64_t bytes_written() const { return bytes_written_; }
  std::uint64_t batches_synced() const { return batches_synced_; }
  std::uint64_t tail_bytes_cut() const { return tail_cut_; }

  // Disk use and compaction.
  std::uint64_t disk_bytes() const;  // all segments, the batch being flushed included
  std::size_t segments() const { return segs_.size(); }
  std::uint64_t live_bytes() const;  // what the groups need (an estimate; see live_group)
  std::uint64_t bytes_reclaimed() const { return bytes_reclaimed_; }    // unlinked (kept ones once dropped)
  std::uint64_t segments_deleted() const { return segments_deleted_; }  // out of the log: unlinked or kept
  std::uint64_t entries_carried() const { return entries_carried_; }
  bool compacting() const { return compaction_.has_value(); }

  // Kept segments: a segment compaction would delete for which `keep(segment)` (asked on the executor when
  // the deletion is decided) is true is renamed to kept_segment_path() instead: out of the raft log (not
  // read by recovery, not counted in disk_bytes() nor by compaction), its bytes still readable there.
  // Never the version-1 file (segment 0).
  void set_keep(std::function<bool(std::uint32_t segment)> keep) { keep_ = std::move(keep); }
  // Unlinks every kept segment for which `still_needed` (asked now, on the executor; unset: none is) is
  // false, then syncs the directory, on the flusher; then `done` on the executor. A kept file found
  // missing counts as unlinked.
  void drop_kept(std::function<bool(std::uint32_t segment)> still_needed,
                 std::function<void(status)> done = {});
  std::vector<std::uint32_t> kept_segments() const;  // ascending
  std::uint64_t kept_bytes() const;
  // `<path>.NNNNNNNN` (segment 0: `<path>`, the version-1 file) and `<path>.kept.NNNNNNNN`.
  static std::string segment_path(const std::string& path, std::uint32_t no);
  static std::string kept_segment_path(const std::string& path, std::uint32_t no);

  // Prepared segments (node_log_options::prepare_segments): rolls onto a spare so far; the spare's path.
  std::uint64_t prepared_segments() const { return prepared_segments_; }
  static std::string spare_name(const std::string& path);
  // Blocks until a spare is ready for the next roll (tests); false if there are no spares or one failed.
  bool wait_for_prepared_segment();

 private:
  struct segment {
    std::uint32_t no = 0;
    std::string path;
    std::uint64_t bytes = 0;
    // The batch whose sync makes this segment's preamble durable (0: written at open).
    std::uint64_t preamble_batch = 0;
    std::uint64_t preamble_bytes = 0;  // header and preamble
  };
  // One pass: the `count` oldest segments, numbered `first`.. (consecutive), go together.
  struct compaction {
    std::uint32_t first = 0;
    std::size_t count = 0;
    std::optional<std::uint64_t> delete_after;  // set once the carried entries are in a batch
    bool deleting = false;

    bool takes(std::uint32_t seg) const { return seg != no_segment && seg >= first && seg - first < count; }
  };
  struct carried;  // the live entries of a pass's segments, read back (node_log.cc)
  // An entry of a batch not yet durable: its record's offset in the batch and its data's in the record's
  // body (entry_place before the batch's segment and offset are known).
  struct batch_place {
    group_id group;
    log_index index;
    std::uint64_t record_offset = 0;
    std::uint32_t data_offset = 0;
  };
  // A full batch waiting for the flush before it to finish.
  struct sealed_batch {
    std::uint64_t no = 0;
    std::vector<std::byte> bytes;
    std::optional<std::vector<std::byte>> roll_preamble;  // set: it starts a new segment
    std::vector<batch_place> places;
  };
  struct kept_segment {
    std::uint64_t bytes = 0;
    bool dropping = false;  // handed to the flusher by drop_kept
  };

  node_log(storage::env& env, log_flusher& f, std::string path, node_log_options opts);
  void note_places(const record::log_record& r, std::size_t offset);
  void report_places();
  std::vector<std::byte> preamble() const;
  void seal();
  void start_segment(std::uint64_t batch, const std::vector<std::byte>& preamble,
                     const std::vector<std::byte>& records);
  bool wants_prepared_segment(std::size_t start, bool sealed_roll) const;
  static result<std::unique_ptr<storage::writable_file>> create_segment(
      storage::env& env, const std::string& path, const std::optional<storage::segment_spares::spare>& spare,
      storage::segment_spares* spares);
  void on_flushed(std::uint64_t batch, bool new_segment, status st);
  void finish_batch(std::uint64_t batch, status st);
  std::uint32_t segment_of(const entry_run& r) const;
  void maybe_compact();
  void on_carried_read(std::uint32_t first, const carried& c);
  void maybe_delete();
  std::uint64_t last_record_batch() const;
  void give_up_compaction(const error& e);

  storage::env& env_;
  log_flusher& flusher_;
  std::string path_;
  std::string dir_;
  node_log_options opts_;
  std::unique_ptr<storage::writable_file> file_;          // the newest segment's
  std::deque<segment> segs_;                              // oldest first; back() is written
  std::map<std::uint64_t, std::uint32_t> batch_segment_;  // first batch flushed into each segment
  std::map<group_id, live_group> live_;
  std::uint64_t live_total_ = 0;  // sum of live_[g].live_bytes()
  std::map<group_id, group_state> recovered_;
  std::vector<std::byte> pending_;
  std::vector<batch_place> pending_places_;  // pending_'s entries (only while on_placed_ is set)
  std::size_t batch_hint_ = 0;  // the last sealed batch's size (capped): the next one's first capacity
  std::optional<std::vector<std::byte>> roll_preamble_;  // set: the open batch starts a new segment
  std::deque<sealed_batch> sealed_;                      // full batches, oldest first, none started
  std::uint64_t open_ = 1;                               // batch that add() fills
  std::uint64_t started_ = 0;                            // highest batch handed to the flusher
  std::uint64_t synced_ = 0;                             // highest durable batch
  bool flushing_ = false;
  // The batch being flushed: its entries, its segment and the file offset of its first byte.
  std::vector<batch_place> flushing_places_;
  std::uint32_t flushing_segment_ = 0;
  std::uint64_t flushing_offset_ = 0;
  std::optional<error> poisoned_;
  std::optional<compaction> compaction_;
  bool compaction_failed_ = false;  // a read or delete failed: no more compaction until restart
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::function<void(std::uint64_t, status)> on_synced_;
  std::function<void(group_id, log_index, const entry_place&)> on_placed_;
  std::function<bool(std::uint32_t)> keep_;
  std::map<std::uint32_t, kept_segment> kept_;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t batches_synced_ = 0;
  std::uint64_t tail_cut_ = 0;
  std::uint64_t bytes_reclaimed_ = 0;
  std::uint64_t segments_deleted_ = 0;
  std::uint64_t entries_carried_ = 0;
  // Prepared segments: the spares (null: off), the length of the newest segment's prepared zeros (0: not
  // prepared; it grows past them too), whether a roll's job (which replaces file_) is under way.
  std::unique_ptr<storage::segment_spares> spares_;
  std::uint64_t prepared_ = 0;
  bool rolling_ = false;
  std::uint64_t prepared_segments_ = 0;
};

}  // namespace weir::raft
