// The record format of the node log: the segment files of one node (per core, later) that hold the
// entries, terms, votes, truncations and snapshots of every group on it (docs/replication-formats.md, "Node
// log").
//
//   file   := header (16 bytes) | record*        (one segment)
//   header := "weirraft" | u32 version | u32 crc32c(magic, version)
//
// Version 2 added the `state` and `carry` records that let older segments be deleted; a version-1 file
// (the single file of weir before segments) holds only the first five kinds and is read as segment 0.
//   record := u32 body_len | u32 crc32c(body) | body                 (little-endian)
//   body   := u8 type | u32 group | payload
//
// A decoded record is a view into the input bytes. Pure functions, any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include "base/result.h"
#include "raft/types.h"
#include "raft/wire_format.h"

namespace weir::raft::record {

inline constexpr std::array<char, 8> file_magic = {'w', 'e', 'i', 'r', 'r', 'a', 'f', 't'};
inline constexpr std::uint32_t file_version = 2;
inline constexpr std::uint32_t min_file_version = 1;  // still read
inline constexpr std::size_t file_header_size = 16;
inline constexpr std::size_t record_header_size = 8;
inline constexpr std::uint32_t max_record_body = 64u << 20;

// New entries of the group, the first at `first`. Entries already stored at those indexes were cut by
// a truncate record before (libraft truncates before it overwrites).
struct entries {
  log_index first;
  std::vector<wire::entry> items;
};
// The group's current term; the vote of the new term is "none".
struct term {
  term_id value;
};
// The group's vote in the current term.
struct vote {
  node_id value;
};
// Deletes the group's entries from `from` on.
struct truncate {
  log_index from;
};
// A snapshot of the group's state machine up to `index`; entries up to index - trailing may be dropped
// (trailing 0: an installed snapshot, which replaces the whole log).
struct snapshot {
  log_index index;
  term_id term;
  log_index conf_index;
  std::vector<wire::server> conf;
  std::uint32_t trailing = 0;
  std::span<const std::byte> data;
};

// A segment's preamble: the group's term, vote, next index and latest snapshot as they were when the
// segment began, so that no older segment is needed for them. Leaves the group's entries alone (the
// snapshot's trailing is only kept for the record; it drops nothing here).
struct state {
  term_id term;
  node_id vote;
  log_index next;  // where the group's next entry goes
  std::optional<snapshot> snap;
};
// Entries copied forward from an older segment that is about to be deleted: the group's entries at
// these indexes, which cuts nothing after them (unlike `entries`, which ends the group's log).
struct carry {
  log_index first;
  std::vector<wire::entry> items;
};

// The type byte of a record is its index here plus one: never reorder.
using body = std::variant<entries, term, vote, truncate, snapshot, state, carry>;

struct log_record {
  group_id group;
  body payload;
};

std::array<std::byte, file_header_size> encode_file_header();
// True for a header of this version.
bool file_header_ok(std::span<const std::byte> in);
// The version of a well-formed header (magic and checksum right, version one this code reads).
std::optional<std::uint32_t> file_header_version(std::span<const std::byte> in);

// Appends one record to `out`.
void encode_record(const log_record& r, std::vector<std::byte>& out);

struct decoded_record {
  std::size_t consumed = 0;
  log_record rec;
};

// The record at the start of `in`; nullopt when `in` ends inside it (a torn tail at the end of the
// file); errc::malformed when the length, checksum or fields are wrong.
result<std::optional<decoded_record>> decode_record(std::span<const std::byte> in);

// The body alone (what the checksum covers), for the fuzzer.
result<log_record> decode_body(std::span<const std::byte> body);

}  // namespace weir::raft::record
