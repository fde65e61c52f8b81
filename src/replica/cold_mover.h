// cold_mover: moves a single node's stream data to the cold tier (docs/cold-tier.md, "A single node").
// The partition is the group and its write-ahead log is the group's log: the mover reads each stream's
// durable bytes that are not in an object yet (from memory, or from the log's segments on the node's
// cold-read threads), hands them to a tier::uploader, and once an object is in the bucket records its
// index through the partition's log (partition::submit_index_record), so that the index is replayed and
// checkpointed with the streams. Nothing local is deleted here: a stream's bytes below its cold end are
// what a reclaim may drop.
//
// What it keeps in memory is only where it stands: per stream, how far its bytes were handed to the
// uploader (fed), which may run ahead of the index's cold end while objects are in flight; a refused
// range (the stream was deleted and created again meanwhile) sets the stream back to its cold end. The
// uploader holds at most max_waiting_bytes of bytes sent and not yet reported: feeding waits beyond it
// (while the bucket is down), and the partition's local bytes (not in objects) grow until the node's
// budget refuses appends.
//
// It owns the shard's cold_sweeper, which deletes the objects nothing names any more (deleted and expired
// streams, orphans) under this run's term and the uploader's settled sequence.
//
// Each run uploads under a term of its own (next_cold_term: a counter in the log's directory, bumped at
// every start before anything is uploaded), so a key of an earlier run, which may hold other bytes
// (an upload whose record never made it to the log), is never written again.
//
// Lives on the partition's executor: every method runs there, and so do the uploader's reports.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "base/result.h"
#include "raft/executor.h"
#include "replica/cold_sweeper.h"
#include "replica/partition.h"
#include "storage/env.h"
#include "tier/uploader.h"

namespace weir::replica {

// The term of this run's uploads from `dir` (a shard's log directory): one more than the last run's,
// written and synced to <dir>/cold-term before it is returned. 1 on a fresh directory.
result<std::uint64_t> next_cold_term(storage::env& e, const std::string& dir);

struct cold_mover_options {
  tier::uploader_options upload;  // epoch, group (the shard), term (next_cold_term), object sizes
  // Bytes handed to the uploader and not yet reported: feeding waits beyond it.
  std::uint64_t max_waiting_bytes = 32ull << 20;
  // How often streams written since the last pass are read for the uploader, and the bytes one stream
  // gives per pass.
  std::chrono::milliseconds scan_interval{200};
  std::size_t scan_bytes = 1u << 20;
  // Stream bytes this shard keeps on its disk (its share of --local-bytes); beyond it, records whose
  // bytes are in objects are forgotten and a checkpoint deletes their segments. 0: nothing is dropped.
  std::uint64_t keep_bytes = 0;
  // Deleting objects nothing names any more (replica/cold_sweeper.h); without its list and remove
  // functions nothing is deleted.
  cold_sweeper_options sweep;
};

struct cold_mover_stats {
  std::uint64_t objects = 0;          // objects uploaded and recorded in the index
  std::uint64_t bytes = 0;            // their stream bytes
  std::uint64_t ranges_refused = 0;   // ranges the index refused (set back and sent again)
  std::uint64_t read_failures = 0;    // reads of local data for an upload that failed (tried again)
  std::uint64_t local_bytes = 0;      // stream bytes not in an object, all streams (last pass)
  std::uint64_t held_bytes = 0;       // stream bytes this shard holds on disk or in memory (last pass)
  std::uint64_t forgotten_bytes = 0;  // bytes left to objects alone (records forgotten)
  std::uint64_t reclaims = 0;         // passes that forgot records (each asks for a checkpoint)
};

class cold_mover {
 public:
  cold_mover(partition& p, cold_mover_options o, tier::uploader::put_fn put);
  ~cold_mover();
  cold_mover(const cold_mover&) = delete;
  cold_mover& operator=(const cold_mover&) = delete;

  // Looks at every stream once (what an earlier run left), then at the streams written since, every
  // scan_interval.
  void start();
  // No more reads, uploads or records (objects in flight may land: orphans for the sweep).
  void stop();
  // A stream's durable bytes grew (or it was created): read it at the next pass.
  void note_written(const std::string& path) { dirty_.insert(path); }

  // Stream bytes on this node that are in no object yet (all streams; counted at each pass, plus what was
  // appended since).
  std::uint64_t local_bytes() const { return stats_.local_bytes + appended_since_count_; }
  // `bytes` were appended (applied, maybe not durable yet): they count at once.
  void note_appended(std::uint64_t bytes) { appended_since_count_ += bytes; }
  const cold_mover_stats& stats() const { return stats_; }
  const tier::uploader& uploads() const { return *uploader_; }
  // The sweeper of objects nothing names (null without sweep functions).
  cold_sweeper* sweeper() { return sweeper_.get(); }
  const cold_sweeper* sweeper() const { return sweeper_.get(); }

  // Runs one pass now (tests; the timer runs them otherwise).
  void pass();

 private:
  struct stream_state {
    streams::stream_offset fed{};  // handed to the uploader up to here
    std::uint64_t generation = 0;  // the incarnation `fed` counts in
    bool reading = false;          // a read of its bytes is in flight
  };
  void arm();
  // Reads `path` from where it was fed up to its durable tail (at most scan_bytes) and hands the bytes
  // over. Returns false when the stream has nothing more to give.
  bool feed(const std::string& path);
  void hand_over(const std::string& path, std::uint64_t generation, streams::stream_offset from,
                 streams::read_plan& plan);
  void on_uploaded(const tier::uploaded_object& u);
  void recount_local_bytes();
  // Over keep_bytes: forgets the records of streams whose bytes are in objects (byte streams without
  // forks: a JSON stream's objects do not keep its message boundaries, a fork on another shard reads its
  // source through this shard's logs), largest first, and asks for a checkpoint.
  void reclaim();

  partition& part_;
  cold_mover_options o_;
  std::unique_ptr<tier::uploader> uploader_;
  std::unique_ptr<cold_sweeper> sweeper_;  // after uploader_: destroyed before it
  std::unordered_map<std::string, stream_state> streams_;
  std::unordered_set<std::string> dirty_;
  raft::executor::timer_id timer_ = 0;
  bool stopped_ = false;
  cold_mover_stats stats_;
  std::uint64_t appended_since_count_ = 0;  // bytes appended since recount_local_bytes
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace weir::replica
