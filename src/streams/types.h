// Value types of the stream state machine: offsets (positions), immutable data chunks, records, read
// plans. Pure data; no I/O. Shared by every core: chunks are immutable and reference counted, so a
// fork on another core can point at its source's bytes without copying them ("pointer-based
// stitching", PROTOCOL.md 4.2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/strong_id.h"

namespace weir::streams {

// A position in a stream's offset space: the number of stored bytes before it. Forks share their
// source's offset space (PROTOCOL.md 8, "Offsets and forked streams"). The wire form (a fixed-width
// token) is the protocol layer's business.
using stream_offset = strong_id<struct stream_offset_tag, std::uint64_t>;

// Immutable bytes, shared across cores and across forks.
using chunk = std::shared_ptr<const std::string>;

inline chunk make_chunk(std::string bytes) {
  return std::make_shared<const std::string>(std::move(bytes));
}

// Where a record's bytes sit in a write-ahead log once its append is durable, so that the hot tier
// may drop them from memory: bytes [data_offset, data_offset + n) of the payload of the log record
// whose header starts at byte `offset` of segment `segment` in core `core`'s log. segment 0: not on
// disk (yet).
struct disk_location {
  std::uint64_t segment = 0;
  std::uint64_t offset = 0;
  std::uint32_t core = 0;
  std::uint32_t data_offset = 0;

  bool known() const { return segment != 0; }
  friend bool operator==(const disk_location&, const disk_location&) = default;
};

// A view of part of a record's bytes: in memory (`buf`), or cold (buf null: read them from `at`).
// `begin` counts from the start of the record's bytes in both places.
struct chunk_slice {
  chunk buf;
  std::uint32_t begin = 0;
  std::uint32_t size = 0;
  disk_location at;

  bool cold() const { return !buf; }
  std::string_view view() const { return std::string_view(*buf).substr(begin, size); }
};

// One append as stored: the bytes and, for JSON streams, how many flattened messages they hold (the
// stored form of a JSON record is "m1,m2,...,mN," so records concatenate). `end` is the stream
// position just after the record.
struct record {
  chunk_slice data;
  std::uint64_t end = 0;
  std::uint32_t messages = 0;

  std::uint64_t begin() const { return end - data.size; }
};

// What a read returns: views of the data (no copy) plus where the reader continues.
// Stream bytes that left the node's disk for the cold tier (docs/cold-tier.md, "Reading"): [from, until)
// of `stream` (the stream whose own bytes they are: a fork's inherited bytes are its source's).
struct object_span {
  std::string stream;
  stream_offset from{};
  stream_offset until{};
};

struct read_plan {
  std::vector<chunk_slice> slices;
  std::size_t bytes = 0;
  stream_offset next{};     // the offset after the last byte returned
  bool up_to_date = false;  // `next` is the tail at the time of the read
  // Set when the read starts in bytes held only in objects: the plan then holds nothing before them
  // (slices empty, next at `from`), and the reader fetches them from the cold tier.
  std::optional<object_span> in_objects;
};

// An append's payload after protocol-level processing (JSON validation and flattening happen in the
// protocol layer, off the owner core). For JSON content the bytes are the stored form.
struct payload {
  chunk bytes;                    // may be null when empty
  std::uint32_t messages = 0;     // JSON: flattened message count
  bool json_invalid = false;      // JSON body did not parse (reported after the state checks)
  bool json_empty_array = false;  // JSON body was `[]`

  std::size_t size() const { return bytes ? bytes->size() : 0; }
  bool empty() const { return size() == 0; }
};

// Expiry configuration of a stream (PROTOCOL.md 5.1): a sliding TTL or an absolute deadline.
struct expiry_config {
  std::optional<std::uint64_t> ttl_seconds;
  std::optional<std::int64_t> expires_at_ms;  // Unix ms
  std::string expires_at_text;                // as the client sent it (echoed on HEAD)

  bool none() const { return !ttl_seconds && !expires_at_ms; }
  friend bool operator==(const expiry_config& a, const expiry_config& b) {
    return a.ttl_seconds == b.ttl_seconds && a.expires_at_ms == b.expires_at_ms;
  }
};

struct producer_ref {
  std::string id;
  std::uint64_t epoch = 0;
  std::uint64_t seq = 0;
  friend bool operator==(const producer_ref&, const producer_ref&) = default;
};

}  // namespace weir::streams
