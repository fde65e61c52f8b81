// recover_log: start-up scan of one core's log directory. Runs once, on the thread that opens the log,
// before any log_writer exists (blocking I/O is fine there).
//
//   * loads the newest valid checkpoint;
//   * with a checkpoint covering lsn C, reads only the 40-byte header of each segment it wholly covers
//     (the next segment's base <= C + 1), allowing gaps in the ids among those (reclaimed segments);
//   * scans the other segments in order (ids contiguous), checking every record's framing, CRC and lsn
//     continuity;
//   * a torn tail (a partial or bad record at the end of the last segment, with no valid record after
//     it) is truncated and logged: those bytes were never acknowledged;
//   * any other damage (a bad record followed by valid ones, a bad record in an older segment, a
//     missing segment, an lsn gap) stops the start with errc::corruption naming the file and offset;
//   * hands the checkpoint to `restore`, then every record after it to `visit`, in lsn order.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "storage/checkpoint_store.h"
#include "storage/env.h"

namespace weir::storage {

struct segment_info {
  segment_id id;
  lsn base;                // lsn of its first record
  lsn last;                // lsn of its last record; base - 1 if it holds none
  std::uint64_t size = 0;  // bytes, header included
};

struct recovered_log {
  std::optional<checkpoint> latest_checkpoint;
  // Every segment present, in id order; the last one is where the writer continues. For a segment recovery
  // only probed (wholly covered by the checkpoint), `last` is the next segment's base - 1 and `size` the
  // file size.
  std::vector<segment_info> segments;
  lsn next_lsn{1};             // the lsn of the next record to append
  segment_id next_segment{1};  // the id of the next segment to create
  // True if the writer must begin a new segment (no segment, or the checkpoint is ahead of the log).
  bool start_new_segment = false;
  std::uint64_t truncated_bytes = 0;  // torn tail dropped, for the log and metrics
  std::uint64_t prepared_bytes = 0;   // unused zeros of a prepared last segment, cut (never data)
};

struct record_view {
  lsn seq;
  std::uint8_t type = 0;
  std::span<const std::byte> payload;  // valid during the visit only
  log_position pos;
};

using record_visitor = std::function<status(const record_view&)>;
// Called once with the checkpoint recovery will use, before the first record is visited.
using checkpoint_visitor = std::function<status(const checkpoint&)>;

result<recovered_log> recover_log(env& e, const std::string& dir, const record_visitor& visit,
                                  const checkpoint_visitor& restore = {});

}  // namespace weir::storage
