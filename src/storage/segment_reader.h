// segment_reader: positional reads of old log data by (segment, offset), for the hot tier: a stream's
// data is located by the log_position its append was acknowledged with. Blocking pread: call it from a
// thread that may block (or, for page-cache-hot data, accept the risk knowingly). Thread-safe.
//
// Read only positions that were acknowledged: bytes of a batch still in flight may yet be undone.
//
// A small cache keeps the last few whole records read (checked), keyed by position, so that reading one
// large record piece by piece (read_data) costs one pread of it, not one per piece. It is bounded by a
// record count and a byte budget; a record larger than the budget is read but not kept.
//
// The records are the write-ahead log's (log_format.h) unless the reader is given another framing: a
// cluster node's raft node log frames its records differently and names its files otherwise
// (raft::node_log_framing), and its places are read through the same reader.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/env.h"

namespace weir::storage {

struct stored_record {
  lsn seq;
  std::uint8_t type = 0;
  std::vector<std::byte> payload;
};

// Bytes [from, from + n) of the payload of the record whose header starts at `record` (read_data_many).
struct data_piece {
  log_position record;
  std::uint64_t from = 0;
  std::uint64_t n = 0;
};

// How a log frames its records and names its segment files. A record is a header of header_size()
// bytes that gives the length of the payload after it, and a checksum over the record.
class record_framing {
 public:
  virtual ~record_framing() = default;
  // The file of segment `id` under the reader's directory; `alternate`: a second name to try when the
  // first does not exist (a segment renamed while it may still be read), or empty.
  virtual std::string file_name(segment_id id, bool alternate) const = 0;
  virtual std::size_t header_size() const = 0;
  // The payload's length from a header (header_size() bytes), or nullopt if it is not one.
  virtual std::optional<std::uint32_t> payload_length(std::span<const std::byte> header) const = 0;
  // The whole record (header and payload) is intact.
  virtual bool intact(std::span<const std::byte> record) const = 0;
};

// The write-ahead log's framing (log_format.h): what a reader uses unless told otherwise.
const record_framing& wal_framing();

struct segment_reader_options {
  std::size_t cache_records = 4;
  std::size_t cache_bytes = 4u << 20;  // header + payload of the records kept
};

class segment_reader {
 public:
  segment_reader(env& e, std::string dir, segment_reader_options opts = {},
                 const record_framing& framing = wal_framing())
      : env_(e), dir_(std::move(dir)), opts_(opts), framing_(framing) {}

  // Raw bytes at `at` (short only at the end of the segment).
  result<std::size_t> pread(log_position at, std::span<std::byte> out);
  // The whole record whose header starts at `at`, checked (framing and CRC): errc::corruption otherwise.
  // The write-ahead log's framing only (its header holds the lsn and type).
  result<stored_record> read_record(log_position at);
  // Payload bytes [from, from + n) of the record whose header starts at `record`, after checking the
  // whole record as read_record does. A range past the payload's end is errc::invalid_argument.
  result<std::string> read_data(log_position record, std::uint64_t from, std::uint64_t n);
  // The bytes of each piece, each record checked as read_data checks it, in the order given. Pieces of
  // records that lie close together in one segment (a catch-up read of many small records appended
  // together, a fork's inherited records) are read with one pread of the span that holds them, at most
  // `window` bytes, instead of two per record; a record that does not fit in its span, and any piece
  // whose span read fails, is read alone (read_data), so each piece fails or succeeds on its own.
  std::vector<result<std::string>> read_data_many(std::span<const data_piece> pieces,
                                                  std::size_t window = 256u << 10);
  // Drops the cached file handle and cached records of a segment (after it was reclaimed).
  void forget(segment_id id);

  // For tests and metrics: reads answered from the cache, and records read from the file.
  std::uint64_t cache_hits() const;
  std::uint64_t record_loads() const;

 private:
  using record_bytes = std::shared_ptr<const std::vector<std::byte>>;  // header + payload, checked

  result<std::shared_ptr<random_access_file>> file_for(segment_id id);
  // The checked record at `at`, from the cache or the file.
  result<record_bytes> load(log_position at);

  std::string where(log_position at) const;

  env& env_;
  std::string dir_;
  segment_reader_options opts_;
  const record_framing& framing_;
  mutable std::mutex mu_;
  std::map<segment_id, std::shared_ptr<random_access_file>> open_;
  std::list<std::pair<log_position, record_bytes>> cache_;  // most recently used first
  std::size_t cached_bytes_ = 0;
  std::uint64_t hits_ = 0, loads_ = 0;
};

}  // namespace weir::storage
