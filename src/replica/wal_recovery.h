// wal_recovery: start-up of the durable store. For every core: recover its write-ahead log
// (<data_dir>/wal/core-N, storage::recover_log: torn tails cut and logged, other damage stops the
// start naming the file and byte offset), restore each core's state machine from its newest checkpoint
// and replay the records after it (each record's data is admitted to the core's hot tier with its
// place in the log, so memory stays within budget while replaying), then link
// every fork to its source's log, which it reads its records before the fork point from (forks may
// cross cores, so this waits until every core has replayed), and finally open each core's log_writer and hand
// it to its partition.
//
// Runs once on the starting thread, before any event loop runs (blocking I/O is fine here); the shards'
// state machines are touched from this thread only while no loop runs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "storage/env.h"
#include "storage/log_writer.h"
#include "storage/segment_reader.h"
#include "streams/state_machine.h"
#include "tier/cold_index.h"

namespace weir::tier {
class hot_tier;
}  // namespace weir::tier
namespace weir::replica {

class partition;

struct wal_options {
  std::string data_dir;
  storage::sync_policy sync;
  std::uint64_t segment_bytes = 128ull << 20;
  std::chrono::microseconds gather{0};  // storage::log_options::gather
  bool prepare_segments = true;         // storage::log_options::prepare_segments
  // Where the logs' disk work runs (storage::disk_worker; null: each writer's own threads; the
  // simulation runs it on its scheduler). Outlives the partitions.
  storage::disk_worker* worker = nullptr;
};

// The logs of a data directory: as many as the cores it was created with (<data_dir>/wal/cores), each
// the log of one shard, whatever the core count of a later start (node runs shard i on core i modulo its
// cores). More than this is refused as damage.
inline constexpr unsigned max_logs = 1024;
// The data directory's log count, or `fresh` when it records none yet (a new directory: open_durable_store
// records the count of the shards it is given).
result<unsigned> recorded_log_count(storage::env& e, const std::string& data_dir, unsigned fresh);

// The segment files of every core, read by the hot tiers (owned by the node, outliving the shards'
// loops).
using segment_readers = std::vector<std::unique_ptr<storage::segment_reader>>;

struct wal_recovery_stats {
  std::uint64_t records = 0;        // commands replayed (all cores)
  std::uint64_t index_records = 0;  // cold index records replayed
  std::uint64_t checkpoints = 0;    // cores restored from a checkpoint
  std::uint64_t checkpoint_streams = 0;
  std::uint64_t truncated_bytes = 0;  // torn tails cut
  std::uint64_t forks_stitched = 0;
  std::uint64_t leaked_references = 0;  // fork references released at start (crash between two cores)
};

// Restores `sm` (empty) from the checkpoint in `dir` (core `core`'s log) and replays the records after
// it, admitting their data to `hot` with its place in the log. Used at start-up and when a core rebuilds
// its state after a log write failed.
// The cold index (`cold`, empty going in) is restored and replayed with it (replica/cold_state.h).
result<storage::recovered_log> replay_core(storage::env& e, const std::string& dir, std::uint32_t core,
                                           streams::state_machine& sm, tier::cold_index& cold,
                                           tier::hot_tier& hot, wal_recovery_stats& stats);

// A running core's state rebuilt from its own log, after a log write failed (the writer fenced every
// later append, so the log holds exactly the commands that succeeded): a fresh state machine is
// restored and replayed (replay_core), its streams take over the log objects of the same streams in
// the state being replaced (state_machine::adopt_logs: forks on other cores point at them, and forks
// keep their links to their sources), and then it replaces `sm`; `hot` gets a
// fresh tier that matches it. Blocking: runs on the core's loop while no command is in flight and no
// checkpoint is being written. On error `sm` and `hot` are left as they were.
status rebuild_core(storage::env& e, const std::string& dir, std::uint32_t core, streams::state_machine& sm,
                    tier::cold_index& cold, std::unique_ptr<tier::hot_tier>& hot, wal_recovery_stats& stats);

// `parts[i]` is shard i (core i of a single node). The number of cores is stored in <data_dir>/wal/cores: a
// stream's owner core is a hash of its path modulo that number, so a data directory only opens with the same
// count.
result<wal_recovery_stats> open_durable_store(storage::env& e, const wal_options& opts,
                                              const std::vector<partition*>& parts, segment_readers& readers);

}  // namespace weir::replica
