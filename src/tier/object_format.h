// object_format: the bytes of one cold object (docs/cold-tier.md, "Object format"). One object packs the
// bytes of several streams of one group, so that a flush of many small streams is one PUT:
//
//   header   32 bytes: magic "WEIRCOLD", u16 version (2; 1 for objects without a record table), u16 flags
//            (0), u32 block_size, u32 group, u64 reserved (0), u32 CRC32C of the 28 bytes before it
//   blocks   the data region (the record bytes of every range, back to back) cut into blocks of
//            block_size bytes (the last one shorter), each followed by the u32 CRC32C of its bytes
//   footer   u32 range count, then per range: u16 stream-name length, the name, u64 first offset,
//            u64 end offset, u64 data position, u64 length; version 2 then adds per range (same order):
//            u64 where its first record begins, u32 its record count, u32 CRC32C of its table entries
//   records  version 2 only: the record table, each range's entries back to back in range order, one per
//            record that begins in the range: u64 the record's end offset, u32 its message count (JSON)
//   trailer  32 bytes: u64 data length, u32 footer length, u32 footer CRC32C, u32 block_size,
//            u32 CRC32C of the 20 bytes before it, magic "WEIRTAIL" (version 1) or "WEIRTAL2" (version 2)
// All integers little-endian. A reader that knows the object's size (from the index or a listing) reads
// the trailer, then the footer, then only the stored blocks that hold the bytes it wants (one aligned
// range GET), and checks each block's CRC. It never uses a suffix range (bytes=-N), which s3rver answers
// wrongly. The record table is read only to find where a record begins and ends inside bytes that are no
// longer on any node's disk (a fork at such an offset: cold-tier.md, "Forks"), one range's entries at a
// time: catch-up reads never fetch it.
//
// The decoders are fuzz-safe: garbage yields an error, never a crash or an unbounded allocation
// (tests/fuzz/object_footer_fuzz.cc). Pure; thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "streams/types.h"
#include "tier/object_key.h"
#include "tier/object_store.h"

namespace weir::tier {

enum class object_format_errc {
  truncated = 1,  // fewer bytes than the format needs
  bad_magic,
  bad_version,
  bad_checksum,  // a CRC32C that does not match: corrupt bytes
  inconsistent,  // lengths or positions that do not fit together
};

constexpr std::uint16_t object_format_version = 2;
constexpr std::size_t object_header_size = 32;
constexpr std::size_t object_trailer_size = 32;
constexpr std::uint32_t default_object_block_size = 1u << 20;
constexpr std::uint32_t max_object_block_size = 16u << 20;
constexpr std::size_t max_stream_name_bytes = 4096;

// One stream's contiguous bytes in the object: stream offsets [first, end), stored at data position
// [data_position, data_position + length) of the data region.
struct object_range {
  std::string stream;
  streams::stream_offset first;
  streams::stream_offset end;
  std::uint64_t data_position = 0;
  std::uint64_t length = 0;
  bool operator==(const object_range&) const = default;
};

struct object_trailer {
  std::uint16_t version = object_format_version;  // from the trailer's magic
  std::uint64_t data_length = 0;
  std::uint32_t footer_length = 0;
  std::uint32_t footer_crc = 0;
  std::uint32_t block_size = 0;
  std::uint64_t footer_offset = 0;  // derived: header + stored blocks
  // Derived: the record table between the footer and the trailer (version 2; empty in version 1).
  std::uint64_t table_offset = 0;
  std::uint64_t table_length = 0;
};

// One record that begins in a range, as the record table lists it. A byte stream's last record in a
// range may end past the range's end (the uploader cut it at the object's end); a JSON stream's never does.
struct object_record {
  streams::stream_offset begin;
  streams::stream_offset end;
  std::uint32_t messages = 0;
  bool operator==(const object_record&) const = default;
};
constexpr std::size_t object_record_entry_size = 12;  // u64 end, u32 messages

// How many of `records` (in offset order) begin before `at`: the part of a list that goes with bytes cut
// at `at`.
inline std::size_t records_before(std::span<const object_record> records, streams::stream_offset at) {
  return static_cast<std::size_t>(
      std::partition_point(records.begin(), records.end(),
                           [at](const object_record& r) { return r.begin < at; }) -
      records.begin());
}

// Where a range's records are in the record table (version 2).
struct range_records {
  streams::stream_offset first_begin;  // where its first record begins (the range's first offset or later)
  std::uint32_t count = 0;
  std::uint32_t crc = 0;             // CRC32C of its entries
  std::uint64_t table_position = 0;  // derived: its first entry's byte position in the table
  bool unknown = false;              // the writer's: the records it was given left a gap, so none are listed
};

struct object_footer {
  object_trailer trailer;
  std::vector<object_range> ranges;
  std::vector<range_records> records;  // one per range in version 2; empty in version 1
};

// The stored size of `data_length` bytes of data cut into blocks (each block's CRC included).
std::uint64_t stored_data_size(std::uint64_t data_length, std::uint32_t block_size);

// Packs ranges into one object. Owned by one thread (the uploader that fills it). The object is encoded as
// the bytes come (each block's CRC32C computed while its bytes are copied in), so that finish() only adds
// the footer and trailer: the data bytes are copied once, into the object.
class object_writer {
 public:
  // `reserve`: the object's expected encoded size (its buffer grows past it if need be). `buffer`: an
  // earlier object's bytes to write into (their memory is reused, not their contents).
  explicit object_writer(cold_group group, std::uint32_t block_size = default_object_block_size,
                         std::size_t reserve = 0, object_bytes buffer = {});

  // Appends one stream's bytes for offsets [first, end) and the records that begin in them (in offset
  // order); returns the range as recorded (the stream's last range, grown, when these bytes continue it).
  const object_range& add(std::string_view stream, streams::stream_offset first, streams::stream_offset end,
                          std::span<const std::byte> bytes, std::span<const object_record> records = {});
  std::uint64_t data_size() const { return data_size_; }
  // The record table's size so far (what the records add to the object beyond their bytes).
  std::uint64_t table_size() const { return table_.size(); }
  // The size finish() will return.
  std::uint64_t encoded_size() const;
  const std::vector<object_range>& ranges() const { return ranges_; }
  // The whole object. Once: the writer is spent after it.
  object_bytes finish();

 private:
  void append_data(std::span<const std::byte> bytes);

  cold_group group_;
  std::uint32_t block_size_;
  object_bytes out_;  // header, then the stored blocks so far (the last one open)
  std::uint64_t data_size_ = 0;
  std::uint32_t block_fill_ = 0;  // data bytes in the open block
  std::uint32_t block_crc_ = 0;   // their CRC32C
  bool finished_ = false;
  std::vector<object_range> ranges_;
  std::vector<range_records> records_;  // one per range
  object_bytes table_;                  // the record table's entries so far
};

// Checks the header (the first object_header_size bytes); returns the block size.
result<std::uint32_t> decode_object_header(std::span<const std::byte> header);
// `tail`: the last object_trailer_size bytes of an object of `object_size` bytes.
result<object_trailer> decode_object_trailer(std::span<const std::byte> tail, std::uint64_t object_size);
// `footer`: the trailer.footer_length bytes at trailer.footer_offset.
result<object_footer> decode_object_footer(std::span<const std::byte> footer, const object_trailer& trailer);

// The records of footer.ranges[range] from their `entries` (exactly count x object_record_entry_size bytes
// at trailer.table_offset + table_position): CRC-checked, each beginning inside the range, in order.
result<std::vector<object_record>> decode_range_records(std::span<const std::byte> entries,
                                                        const object_footer& footer, std::size_t range);
// Reads and decodes them through a store (one ranged GET; none for a range without records). An object
// of version 1 has no record table: store_errc::invalid with code "NoRecordTable".
store_result<std::vector<object_record>> read_range_records(object_store& store, const std::string& key,
                                                            const object_footer& footer, std::size_t range);

// The stored blocks that hold data bytes [data_position, data_position + length): one aligned range.
struct block_span {
  std::uint64_t first_block = 0;
  std::uint64_t block_count = 0;
  std::uint64_t object_offset = 0;  // where the first block starts in the object
  std::uint64_t object_length = 0;  // the stored bytes of those blocks (CRCs included)
};
// length must be > 0 and the bytes within the data region (the caller checks against the trailer).
block_span blocks_covering(const object_trailer& t, std::uint64_t data_position, std::uint64_t length);
// Checks each fetched block's CRC and returns data bytes [data_position, data_position + length).
// `stored`: exactly the span.object_length bytes at span.object_offset.
result<object_bytes> extract_from_blocks(const object_trailer& t, const block_span& span,
                                         std::span<const std::byte> stored, std::uint64_t data_position,
                                         std::uint64_t length);

// A format error (one of the decoders above) as a store error: code "Corrupt" for a CRC mismatch,
// "BadObject" for any other.
store_error format_store_error(const weir::error& e);

// Reads one object through an object_store: the trailer and footer on open (one GET of the tail when the
// footer fits in it), then aligned block ranges. Format errors come back as store_errc::other with the
// reason; a CRC mismatch as store_errc::other with code "Corrupt". Blocking (an object_store worker).
class object_reader {
 public:
  static constexpr std::uint64_t tail_read_bytes = 64 * 1024;

  static store_result<object_reader> open(object_store& store, std::string key, std::uint64_t object_size);

  const object_footer& footer() const { return footer_; }
  const std::string& key() const { return key_; }
  // Data bytes [data_position, data_position + length) (within the data region).
  store_result<object_bytes> read(std::uint64_t data_position, std::uint64_t length);
  store_result<object_bytes> read(const object_range& r) { return read(r.data_position, r.length); }
  // The records that begin in footer().ranges[range] (read_range_records).
  store_result<std::vector<object_record>> records(std::size_t range) {
    return read_range_records(*store_, key_, footer_, range);
  }

 private:
  object_reader(object_store& store, std::string key, object_footer footer)
      : store_(&store), key_(std::move(key)), footer_(std::move(footer)) {}
  object_store* store_;
  std::string key_;
  object_footer footer_;
};

}  // namespace weir::tier
