// hot_tier: the memory budget of one core's stream data (docs/storage.md, "Hot tier").
//
// A record enters the tier when its append is durable and its place in the log is known (admit). Once
// the core holds more than its budget, the oldest records are evicted: state_machine::evict drops their
// bytes, which stay in the log's segment files only. Cold slices of a read plan are read back from the
// segment files (resolve: storage::segment_reader, pread; records close together in a segment with one
// pread of their span; the reader caches the last records it read, so a catch-up reading a large record
// in chunks reads it once).
//
// The FIFO holds an entry per hot record, also of streams deleted since (their bytes went with them):
// the tier learns of removals from the state machine (state_machine::removals), forgets the bytes of
// streams that are gone at once and drops their entries once they are half the FIFO, so that neither
// the FIFO nor bytes() grows with the streams created and deleted over the node's life.
//
// Reads of client data do not run here on the loop: stream_shard hands a plan with cold slices to the
// node's cold_reader threads, which call resolve_slices (thread-safe: it only uses the segment readers).
// resolve and bytes_of read on the calling thread (start-up, tests, a snapshot sent to a peer). A read
// plan is bounded by the server's read chunk (64 KiB by default, or one record).
//
// Lives on its shard's core; not thread-safe (the segment readers it uses are).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "storage/segment_reader.h"
#include "streams/state_machine.h"

namespace weir::tier {

class hot_tier {
 public:
  // `budget_bytes`: what this core may keep in memory; `readers[c]`: core c's segment files (a fork's
  // inherited records are its source's, in its source core's log). No readers: nothing is ever cold.
  hot_tier(std::size_t budget_bytes, std::vector<storage::segment_reader*> readers);

  // The record of stream generation `generation` ending at `end` is durable at `at`: record its place,
  // then evict the oldest records while over budget.
  void admit(streams::state_machine& sm, std::uint64_t generation, std::uint64_t end, std::uint32_t size,
             const streams::disk_location& at);

  // Reads every cold slice of `plan` from disk. On an error the plan is cut before the failing slice
  // (it never holds bytes out of order) and the error is returned.
  status resolve(streams::read_plan& plan) const { return resolve_slices(readers_, plan); }
  // resolve with the given readers; safe on any thread (the cold_reader's).
  static status resolve_slices(const std::vector<storage::segment_reader*>& readers,
                               streams::read_plan& plan);
  // Whether `plan` holds a slice that must be read from disk, or starts in bytes only in the bucket.
  static bool has_cold(const streams::read_plan& plan);
  const std::vector<storage::segment_reader*>& readers() const { return readers_; }
  // The bytes of one slice, read from memory or from disk.
  result<std::string> bytes_of(const streams::chunk_slice& s) const;
  // The bytes of a cold slice, read from disk through readers[s.at.core]; safe on any thread.
  static result<streams::chunk> load(const std::vector<storage::segment_reader*>& readers,
                                     const streams::chunk_slice& s);

  // An empty tier with the same budget and readers (for a state rebuilt from the log).
  std::unique_ptr<hot_tier> empty_like() const { return std::make_unique<hot_tier>(budget_, readers_); }

  // Bytes of the hot records of streams that exist (as of the last admit).
  std::size_t bytes() const { return bytes_; }
  std::size_t budget() const { return budget_; }
  std::uint64_t evicted() const { return evicted_; }
  // Entries in the FIFO, those of removed streams not yet dropped included (at most about twice the
  // hot records of the streams that exist).
  std::size_t entries() const { return fifo_.size(); }

 private:
  struct entry {
    std::uint64_t generation;
    std::uint64_t end;
    std::uint32_t size;
  };
  // A stream incarnation's entries in the FIFO.
  struct tally {
    std::size_t bytes = 0;
    std::size_t entries = 0;
  };

  // Forgets the streams `sm` removed since the last look (amortized: a look costs O(tallies_)), then
  // drops the FIFO entries of forgotten streams once they are half of it.
  void forget_removed(const streams::state_machine& sm);

  std::size_t budget_;
  std::vector<storage::segment_reader*> readers_;
  std::deque<entry> fifo_;
  std::unordered_map<std::uint64_t, tally> tallies_;  // by generation: every generation with live entries
  std::size_t dead_entries_ = 0;     // entries of fifo_ whose generation is no longer in tallies_
  std::uint64_t removals_seen_ = 0;  // state_machine::removals() at the last look
  std::size_t admits_since_look_ = 0;
  std::size_t bytes_ = 0;
  std::uint64_t evicted_ = 0;
};

}  // namespace weir::tier
