// The on-disk format of the write-ahead log and of checkpoints, in one place. docs/log-format.md is
// the prose version of this header; change both together. All integers are little-endian.
//
// A log directory holds one core's log:
//   <20-digit segment id>.log              segment files, ids from 1; gaps only among segments the
//                                          newest checkpoint wholly covers (reclaimed ones)
//   checkpoint-<20-digit lsn>.ckpt         snapshots; .ckpt.tmp while being written
//
// Segment file = segment header, then records back to back (no padding, no alignment).
//   segment header (40 bytes)
//     0  char[8] magic "weirlog1"
//     8  u32     format version (1)
//     12 u32     reserved, 0
//     16 u64     segment id (matches the file name)
//     24 u64     base lsn: the lsn of the first record this segment holds (or will hold)
//     32 u32     crc32c of bytes [0, 32)
//     36 u32     reserved, 0
//   record (24-byte header + payload)
//     0  u32     crc32c of bytes [4, 24 + length): the rest of the header and the payload
//     4  u32     length of the payload in bytes (<= max_record_payload)
//     8  u64     lsn: previous record's lsn + 1 (the segment's base lsn for its first record)
//     16 u8      type, 1..255: the caller's command type; 0 is invalid so zero-filled bytes never parse
//     17 u8[7]   reserved, 0
//     24 u8[]    payload, opaque to storage
//
// Checkpoint file = header + blob.
//     0  char[8] magic "weirckp1"
//     8  u32     format version (1)
//     12 u32     reserved, 0
//     16 u64     lsn covered: the snapshot includes every record with lsn <= this
//     24 u64     blob length
//     32 u32     crc32c of bytes [0, 32) followed by the blob
//     36 u32     reserved, 0
//     40 u8[]    blob, opaque to storage
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "storage/types.h"

namespace weir::storage::format {

inline constexpr std::uint32_t version = 1;
inline constexpr std::array<char, 8> segment_magic = {'w', 'e', 'i', 'r', 'l', 'o', 'g', '1'};
inline constexpr std::array<char, 8> checkpoint_magic = {'w', 'e', 'i', 'r', 'c', 'k', 'p', '1'};
inline constexpr std::size_t segment_header_size = 40;
inline constexpr std::size_t record_header_size = 24;
inline constexpr std::size_t checkpoint_header_size = 40;
// A length above this is a framing error, not a huge record: it bounds what recovery will trust.
inline constexpr std::uint32_t max_record_payload = 64u << 20;

struct segment_header {
  segment_id id;
  lsn base;
};

struct record_header {
  std::uint32_t crc = 0;
  std::uint32_t length = 0;
  lsn seq;
  std::uint8_t type = 0;
};

struct checkpoint_header {
  lsn covered;
  std::uint64_t blob_length = 0;
  std::uint32_t crc = 0;
};

// Little-endian field access (the host is little-endian x86-64/aarch64, but say so in one place).
inline void put_u32(std::byte* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
inline void put_u64(std::byte* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
inline std::uint32_t get_u32(const std::byte* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return v;
}
inline std::uint64_t get_u64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

std::array<std::byte, segment_header_size> encode_segment_header(const segment_header& h);
// nullopt if the magic, version or CRC is wrong.
std::optional<segment_header> decode_segment_header(std::span<const std::byte> bytes);

// Writes a complete record (header + payload) into `out`, which must hold record_header_size + payload.
void encode_record(std::span<std::byte> out, lsn seq, std::uint8_t type, std::span<const std::byte> payload);
// Writes the header fields except crc and lsn (the writer fills those in on the sync thread, when the
// record's lsn is known); seal_record() then sets lsn and crc over the whole record in place.
void encode_record_unsealed(std::span<std::byte> out, std::uint8_t type, std::span<const std::byte> payload);
void seal_record(std::span<std::byte> record, lsn seq);
// Parses the 24 header bytes. nullopt if the type is 0, a reserved byte is set or length is too large:
// such bytes cannot be the start of a record.
std::optional<record_header> decode_record_header(std::span<const std::byte> bytes);
// True if `record` (header + payload, exactly) carries a CRC that matches its contents.
bool record_crc_ok(std::span<const std::byte> record);

std::array<std::byte, checkpoint_header_size> encode_checkpoint_header(lsn covered,
                                                                       std::span<const std::byte> blob);
std::optional<checkpoint_header> decode_checkpoint_header(std::span<const std::byte> bytes);
bool checkpoint_crc_ok(std::span<const std::byte> header, std::span<const std::byte> blob);

// File names inside a log directory.
std::string segment_file_name(segment_id id);
std::string checkpoint_file_name(lsn covered);
std::optional<segment_id> parse_segment_file_name(std::string_view name);
std::optional<lsn> parse_checkpoint_file_name(std::string_view name);
inline constexpr std::string_view temp_suffix = ".tmp";

}  // namespace weir::storage::format
