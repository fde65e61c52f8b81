// stream_log: where one stream's bytes live. The state machine talks to this small interface only, so
// the on-disk log and hot tier (next issue) can replace the in-memory implementation. A fork's log
// starts with its inherited records (shared chunks of the source), then its own.
//
// Owned by the stream's owner core; not thread-safe. The chunks it hands out are immutable and may be
// passed to other cores. A record may be cold (chunk_slice::buf null, its bytes on disk at
// chunk_slice::at): reads hand out its slices like those of hot records, and the caller fetches the
// bytes of cold slices from the log.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "streams/types.h"

namespace weir::streams {

class stream_log {
 public:
  virtual ~stream_log() = default;

  virtual stream_offset tail() const = 0;
  virtual void append(record r) = 0;

  // Data from `from` up to at most `max_bytes` (at least one record when whole_records and one fits
  // nowhere else). whole_records: never split a record (JSON streams keep message boundaries).
  virtual read_plan read(stream_offset from, std::size_t max_bytes, bool whole_records) const = 0;

  // Every record (or part of one) before `upto`: what a fork at `upto` inherits.
  virtual std::vector<record> prefix(stream_offset upto) const = 0;

  // The record that begins exactly at `at`, or nullptr.
  virtual const record* record_at(stream_offset at) const = 0;

  // True when `at` is a record boundary (or the tail).
  virtual bool is_boundary(stream_offset at) const = 0;

  // The record whose `end` is exactly `end`, or nullptr. Mutable so that the hot tier can record where
  // its bytes are on disk and drop them from memory; its position and size must not change.
  virtual record* find_record(std::uint64_t end) = 0;

  // Calls `fn` with every record, in order of position (inherited ones first).
  virtual void for_each_record(const std::function<void(const record&)>& fn) const = 0;
};

// The in-memory implementation: a vector of records ordered by position.
class memory_log final : public stream_log {
 public:
  memory_log() = default;
  // A fork's log: the inherited records, positioned so that the log's tail starts at `base` (the fork
  // point) even when the inherited records are not at hand (replay).
  memory_log(std::vector<record> inherited, stream_offset base);

  stream_offset tail() const override;
  void append(record r) override;
  read_plan read(stream_offset from, std::size_t max_bytes, bool whole_records) const override;
  std::vector<record> prefix(stream_offset upto) const override;
  const record* record_at(stream_offset at) const override;
  bool is_boundary(stream_offset at) const override;
  record* find_record(std::uint64_t end) override;  // newest, next after the last found, or binary search
  void for_each_record(const std::function<void(const record&)>& fn) const override;

 private:
  // Index of the first record whose end is after `pos`.
  std::size_t first_ending_after(std::uint64_t pos) const;

  std::vector<record> records_;
  std::uint64_t base_ = 0;
  std::size_t next_hint_ = 0;  // just after the record find_record last found (the hot tier evicts in order)
};

}  // namespace weir::streams
