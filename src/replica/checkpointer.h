// checkpointer: when a core's log has grown by `every_bytes` since its last checkpoint, snapshots the
// core's state machine and hands it to the log writer (storage::log_writer::checkpoint), so that a
// restart loads the snapshot and replays only the log after it; the writer then reclaims the segments
// that the checkpoint covers and no record points at any more (docs/storage.md, "Checkpoints").
//
// A snapshot must describe exactly the records up to an lsn, so it is cut when no command is in flight:
// once a checkpoint is due the shard holds back new writes (pausing()), the commands in flight complete
// (one group commit), the state is cut (streams::state_machine::cut: each stream's metadata and record
// count, O(streams)) and the held writes resume. The cut's records are encoded into the blob on a thread
// of the checkpointer's own while the loop goes on (a core that keeps millions of records took its loop
// for a second to encode them: docs/benchmarks.md, "Checkpoints off the loop"); then the blob goes to the
// log writer. Meanwhile no record may leave a stream's front (encoding(): the cold tier forgets nothing,
// a rebuild waits); if one did anyway, the encode fails and the checkpoint is taken again.
//
// Lives on its shard's core; `ex` must accept posts from other threads (the encoder's completion).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "raft/executor.h"
#include "replica/shard_wal.h"
#include "storage/segment_reader.h"
#include "streams/state_machine.h"
#include "tier/cold_index.h"

namespace weir::replica {

class checkpointer {
 public:
  // `reader`: this core's segment files (its cached handles are dropped when a segment is reclaimed);
  // may be null. `resume` runs once a checkpoint was taken (the shard replays the writes it held back).
  // `cold`: the partition's cold index, snapshotted with the state machine (replica/cold_state.h).
  checkpointer(shard_wal& wal, streams::state_machine& sm, const tier::cold_index& cold, std::uint32_t core,
               std::uint64_t every_bytes, storage::segment_reader* reader, raft::executor& ex,
               std::function<void()> resume);
  ~checkpointer();
  checkpointer(const checkpointer&) = delete;
  checkpointer& operator=(const checkpointer&) = delete;

  // Call after each command: starts a checkpoint when one is due.
  void poll();
  // A checkpoint is due now (records were forgotten whose segments it may delete): taken at once, or
  // after the one being written.
  void request();
  // The cold tier's restore snapshots (replica/cold_snapshots.h): the same cut as a checkpoint (taken when
  // no command is in flight, so it describes exactly the log up to `lsn`: never a write that may still
  // fail), handed to `fn` on this core instead of being written to disk: the checkpoint blob
  // (encode_checkpoint) and the lsn it covers. An error when the log has failed (nothing is taken then).
  struct bucket_cut {
    storage::lsn covered;
    std::vector<std::byte> blob;
  };
  void snapshot_for_bucket(std::function<void(result<bucket_cut>)> fn);

  // A checkpoint waits for the commands in flight: hold back new writes.
  bool pausing() const { return waiting_; }
  // A checkpoint is being encoded, or written (and segments reclaimed) by the log's sync thread.
  bool writing() const { return writing_ || encoding_; }
  // A cut's records are being encoded off the loop: no record may leave a stream's front.
  bool encoding() const { return encoding_; }
  // Runs `fn` on this core once a checkpoint has been written and none is being taken (at once when
  // that is so already): an operator's or a test's "the state is on disk".
  void when_written(std::function<void()> fn);

 private:
  void take();
  // On the loop, once the cut taken at `covered` is encoded (or failed).
  struct encoded;
  void on_encoded(encoded e);
  bool settled() const { return taken_ > 0 && !waiting_ && !writing(); }

  shard_wal& wal_;
  streams::state_machine& sm_;
  const tier::cold_index& cold_;
  std::uint32_t core_;
  std::uint64_t every_bytes_;
  storage::segment_reader* reader_;
  raft::executor& ex_;
  std::function<void()> resume_;
  bool waiting_ = false;
  bool encoding_ = false;
  std::thread encoder_;  // the last cut's encoder (joined before the next starts, and at destruction)
  bool requested_ = false;
  bool writing_ = false;  // a checkpoint is being written by the log's sync thread
  bool local_ = false;    // the cut being waited for is written to disk (else only handed to bucket_)
  std::vector<std::function<void(result<bucket_cut>)>> bucket_;
  std::uint64_t taken_ = 0;
  std::vector<std::function<void()>> written_;  // when_written's, until settled()
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace weir::replica
