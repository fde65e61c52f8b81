// node_log: the one log a node keeps for all its raft groups (one per core, later), with group commit:
// the entries, terms, votes, truncations and snapshots of every group go into one batch, written and
// synced together; a caller learns through on_synced() which batch became durable. Record format:
// log_record.h and docs/replication.md.
//
// At open, the file is scanned once and each group's state (term, vote, snapshot, entries) rebuilt; a
// group takes its state once, when libraft calls load(). A torn record at the tail (a crash during a
// write) is cut off; records are never rewritten (compaction is future work: docs/replication.md).
//
// Owned by node_io; runs on the node's executor. At most one batch is being flushed at a time; records
// added meanwhile form the next batch.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "raft/executor.h"
#include "raft/log_record.h"
#include "raft/types.h"
#include "storage/env.h"

namespace weir::raft {

// Writes a batch and makes it durable (append, then fdatasync), then calls `done` on the node's
// executor. Production will run this on a sync thread; delayed_flusher runs it on the executor after a
// chosen disk latency (tests and the simulation).
class log_flusher {
 public:
  virtual ~log_flusher() = default;
  virtual void flush(storage::writable_file& f, std::vector<std::byte> bytes,
                     std::function<void(status)> done) = 0;
};

// Appends at once (the bytes reach the "page cache": a crash may still drop them), syncs after
// latency() milliseconds on the executor.
class delayed_flusher final : public log_flusher {
 public:
  delayed_flusher(executor& ex, std::function<std::chrono::milliseconds()> latency)
      : ex_(ex), latency_(std::move(latency)) {}
  void flush(storage::writable_file& f, std::vector<std::byte> bytes,
             std::function<void(status)> done) override;

 private:
  executor& ex_;
  std::function<std::chrono::milliseconds()> latency_;
};

// One stored entry as recovered from the file.
struct stored_entry {
  term_id term;
  std::uint8_t type = 0;
  std::vector<std::byte> data;
};

struct stored_snapshot {
  log_index index;
  term_id term;
  log_index conf_index;
  std::vector<std::byte> conf;  // wire::encode_servers bytes
  std::vector<std::byte> data;
};

// What the file says about one group.
struct group_state {
  term_id term;
  node_id vote;
  std::optional<stored_snapshot> snapshot;
  log_index start{1};  // index of entries[0]
  std::vector<stored_entry> entries;

  log_index next_index() const { return log_index(start.value() + entries.size()); }
};

class node_log {
 public:
  // Opens `path` through `env` (creating it if missing) and recovers every group's state.
  static result<std::unique_ptr<node_log>> open(storage::env& env, log_flusher& flusher, std::string path);
  ~node_log();

  // The recovered state of `g` (empty if the file never mentioned it). Callable once per group.
  group_state take_group_state(group_id g);

  // Adds a record to the open batch; returns the number of the batch it will be durable with.
  std::uint64_t add(const record::log_record& r);
  // Starts flushing the open batch if no flush is running (node_io calls this once per loop turn).
  void flush();
  // Called after each flush with the batch number and its outcome. After an error the log is poisoned:
  // every later batch fails too.
  void set_on_synced(std::function<void(std::uint64_t batch, status)> fn) { on_synced_ = std::move(fn); }

  // Highest batch known durable; the open batch's number.
  std::uint64_t synced_batch() const { return synced_; }
  std::uint64_t open_batch() const { return open_; }
  bool flushing() const { return flushing_; }
  bool has_pending() const { return !pending_.empty(); }

  std::uint64_t bytes_written() const { return bytes_written_; }
  std::uint64_t batches_synced() const { return batches_synced_; }
  std::uint64_t tail_bytes_cut() const { return tail_cut_; }

 private:
  node_log(log_flusher& f, std::unique_ptr<storage::writable_file> file);
  void on_flushed(std::uint64_t batch, status st);

  log_flusher& flusher_;
  std::unique_ptr<storage::writable_file> file_;
  std::map<group_id, group_state> recovered_;
  std::vector<std::byte> pending_;
  std::uint64_t open_ = 1;    // batch that add() fills
  std::uint64_t synced_ = 0;  // highest durable batch
  bool flushing_ = false;
  std::optional<error> poisoned_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::function<void(std::uint64_t, status)> on_synced_;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t batches_synced_ = 0;
  std::uint64_t tail_cut_ = 0;
};

// Applies one record to a group's state (recovery and tests). Fails on a gap in the entries.
status apply_record(group_state& g, const record::body& r);

}  // namespace weir::raft
