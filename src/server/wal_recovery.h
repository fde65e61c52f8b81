// wal_recovery: start-up of the durable store. For every core: recover its write-ahead log
// (<data_dir>/wal/core-N, storage::recover_log: torn tails cut and logged, other damage stops the
// start naming the file and byte offset), replay each record into that core's state machine, then give
// every replayed fork its source's records (forks may cross cores, so this waits until every core has
// replayed), and finally open each core's log_writer and hand it to its shard.
//
// Runs once on the starting thread, before any event loop runs (blocking I/O is fine here); the shards'
// state machines are touched from this thread only while no loop runs.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "storage/env.h"
#include "storage/log_writer.h"

namespace weir::server {

class stream_shard;

struct wal_options {
  std::string data_dir;
  storage::sync_policy sync;
  std::uint64_t segment_bytes = 128ull << 20;
};

struct wal_recovery_stats {
  std::uint64_t records = 0;          // commands replayed (all cores)
  std::uint64_t truncated_bytes = 0;  // torn tails cut
  std::uint64_t forks_stitched = 0;
  std::uint64_t leaked_references = 0;  // fork references released at start (crash between two cores)
};

// `shards[i]` is core i. The number of cores is stored in <data_dir>/wal/cores: a stream's owner core
// is a hash of its path modulo that number, so a data directory only opens with the same count.
result<wal_recovery_stats> open_durable_store(storage::env& e, const wal_options& opts,
                                              const std::vector<stream_shard*>& shards);

}  // namespace weir::server
