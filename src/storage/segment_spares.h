// segment_spares: the log's next segment file, prepared ahead of time on a thread of its own: a file of
// zeros, written and fdatasynced, which the writer renames into place when it rolls (log_writer).
//
// Why: an fdatasync after a write into blocks that are already written, below the file's length, has no
// metadata to commit (no block allocation, no new length), so ext4 flushes the data alone instead of also
// committing its journal. Measured on this project's VM disk (weir-sync-cost, bench/storage/
// sync_cost.cc): 1 KiB appends followed by fdatasync took 0.17-0.20 ms at the median growing the file,
// 0.10-0.13 ms over written zeros, 3 device writes per sync against 2; the same at 4-64 KiB.
//
// Spares grow: the first holds `first_bytes`, each next one twice the last, up to `max_bytes` (the
// segment size), so that a node that writes little writes few zeros, and one that writes much rolls
// rarely. One spare at a time, named `spare.tmp` (or the name given) in the log's directory (recovery ignores
// the name; a spare left by a crash is removed when the next one is prepared).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "storage/env.h"

namespace weir::storage {

// The last segment of a log that prepares its segments may end, after a crash, in a torn write followed
// by the spare's zeros. One past the last non-zero byte of `bytes` (0 if all are zero): no record starts
// at or after it (a record's header always holds a non-zero field).
std::uint64_t nonzero_end(std::span<const std::byte> bytes);
// Where the bytes written after `from` (the end of the last whole record) end: the zeros past that point
// are a prepared segment's unused room (a spare's length is a whole number of pages; or a length
// persisted past the data), those before it a torn write, whose end may be a header's high bytes or a
// payload's zeros (a run shorter than a page that does not reach a page-aligned end). Only what recovery
// counts and logs depends on it: the cut is at `from` either way.
std::uint64_t written_end(std::span<const std::byte> bytes, std::uint64_t from);

class segment_spares {
 public:
  struct spare {
    std::string path;
    std::uint64_t bytes = 0;  // its length: all zeros, durable
  };

  // bytes_per_second: the pace of the zeros (0: as fast as the disk takes them). `name`: the spare's file
  // name in `dir` (the raft node log, whose directory holds other files, names its own).
  segment_spares(env& e, std::string dir, std::uint64_t first_bytes, std::uint64_t max_bytes,
                 std::uint64_t bytes_per_second = 0, std::string name = file_name);
  ~segment_spares();  // stops the thread; an untaken spare stays on disk (removed at the next start)
  segment_spares(const segment_spares&) = delete;
  segment_spares& operator=(const segment_spares&) = delete;

  static constexpr const char* file_name = "spare.tmp";

  // Starts preparing the next spare unless one is ready or under way. Cheap; any thread.
  void request();
  // The ready spare, if any: the caller renames it into place (and calls request() for the next one).
  std::optional<spare> take();
  bool ready() const;
  // Blocks until a spare is ready or the last preparation failed, at most `limit` (tests). False unless
  // a spare is ready.
  bool wait_ready(std::chrono::milliseconds limit = std::chrono::seconds(20));
  // Spares prepared so far, and failed preparations (logged; the writer then grows its segments).
  std::uint64_t prepared() const;
  std::uint64_t failed() const;

 private:
  void run();
  status prepare(std::uint64_t bytes);

  env& env_;
  const std::string dir_;
  const std::string path_;
  const std::uint64_t max_bytes_;
  const std::uint64_t bytes_per_second_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable ready_cv_;
  std::uint64_t next_bytes_;
  bool wanted_ = false;
  bool ready_ = false;
  bool stop_ = false;
  bool last_failed_ = false;
  std::uint64_t ready_bytes_ = 0;
  std::uint64_t prepared_ = 0;
  std::uint64_t failed_ = 0;
  std::thread thread_;
};

}  // namespace weir::storage
