// segment_reader: positional reads of old log data by (segment, offset), for the hot tier: a stream's
// data is located by the log_position its append was acknowledged with. Blocking pread: call it from a
// thread that may block (or, for page-cache-hot data, accept the risk knowingly). Thread-safe.
//
// Read only positions that were acknowledged: bytes of a batch still in flight may yet be undone.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/env.h"

namespace weir::storage {

struct stored_record {
  lsn seq;
  std::uint8_t type = 0;
  std::vector<std::byte> payload;
};

class segment_reader {
 public:
  segment_reader(env& e, std::string dir) : env_(e), dir_(std::move(dir)) {}

  // Raw bytes at `at` (short only at the end of the segment).
  result<std::size_t> pread(log_position at, std::span<std::byte> out);
  // The whole record whose header starts at `at`, checked (framing and CRC): errc::corruption otherwise.
  result<stored_record> read_record(log_position at);
  // Drops the cached file handle (after the segment was reclaimed).
  void forget(segment_id id);

 private:
  result<std::shared_ptr<random_access_file>> file_for(segment_id id);

  env& env_;
  std::string dir_;
  std::mutex mu_;
  std::map<segment_id, std::shared_ptr<random_access_file>> open_;
};

}  // namespace weir::storage
