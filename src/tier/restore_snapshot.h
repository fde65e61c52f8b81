// restore_snapshot: the object a group uploads so that it can be rebuilt from the bucket alone
// (docs/cold-tier.md, "Restore"). It wraps the group's state at one point of its log, as a checkpoint
// holds it (the caller's blob: for a single node, replica::encode_checkpoint of a state machine whose
// bytes not yet in objects are inlined, and the cold index), with what a restore must check first. All
// integers are little-endian:
//
//   header  48 B   "WEIRREST" | u16 version=1 | u16 flags=0 | u32 group | u32 groups | u16 epoch | u16 0 |
//                  u64 lsn | i64 taken_at_ms | u32 crc32c(state) | u32 crc32c(header 0..44)
//   state          the rest of the object
//
// `groups`: how many groups the uploader's node had (a single node: its shard count; a restore needs a
// snapshot of each). `lsn`: the point of the group's log the state describes; `taken_at_ms`: wall-clock
// time when it was taken (what a restore reports as its point in time).
//
// A state larger than one object is cut into parts (snapshot_part_key: part 0, 1, ...), each a slice of
// the state's bytes and nothing else, and the snapshot's own key holds a head of version 2, uploaded
// after every part has landed, so that a head in the bucket means a complete snapshot:
//
//   header  48 B   as above with version=2, and crc32c(part table) in place of crc32c(state)
//   table          u32 parts | u32 0 | per part: u64 size | u32 crc32c(part) | u32 0
//
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/result.h"
#include "tier/object_key.h"
#include "tier/object_store.h"

namespace weir::tier {

struct restore_snapshot_header {
  cold_epoch epoch;
  cold_group group;
  std::uint32_t groups = 0;
  std::uint64_t lsn = 0;
  std::int64_t taken_at_ms = 0;
};

inline constexpr std::size_t restore_snapshot_header_size = 48;

// One object of version 1.
object_bytes encode_restore_snapshot(const restore_snapshot_header& h, std::span<const std::byte> state);

// What a snapshot uploads: `head` under snapshot_key, after `parts` (if any) under snapshot_part_key.
struct restore_snapshot_objects {
  object_bytes head;
  std::vector<object_bytes> parts;  // empty: the head holds the state (version 1)
  std::uint64_t bytes() const;      // all of them together
};
// One object of version 1 when it is at most `max_object` bytes, else a head of version 2 and parts of
// at most `max_object` bytes each (max_object > restore_snapshot_header_size).
restore_snapshot_objects encode_restore_snapshot_objects(const restore_snapshot_header& h,
                                                         std::span<const std::byte> state,
                                                         std::uint64_t max_object);

struct restore_snapshot_part {
  std::uint64_t size = 0;
  std::uint32_t crc = 0;
};
struct restore_snapshot_view {
  restore_snapshot_header header;
  std::span<const std::byte> state;          // into the decoded bytes; empty in a head of parts
  std::vector<restore_snapshot_part> parts;  // a head of version 2: what its parts hold, in order
};
// Checks the magic, version, both CRCs and the header's values (groups > group); object_format_errc
// errors with a reason otherwise. Never reads outside `object`.
result<restore_snapshot_view> decode_restore_snapshot(std::span<const std::byte> object);

// The whole snapshot as one object of version 1 (what decode_restore_snapshot then reads with its state):
// `head` itself when it holds the state, else its header and its parts, read by number with `get_part`
// and each checked against the head's table (size and CRC32C). Errors: the head's, a part's reader's,
// and a part that does not match (object_format_errc, naming the part).
result<object_bytes> join_restore_snapshot(
    object_bytes head, const std::function<result<object_bytes>(std::uint32_t)>& get_part);

// The snapshot under `key` (a snapshot_key) read whole from `store`, its parts joined as above. Errors:
// a read the store refused (the store's error; a part's names its key), and join_restore_snapshot's.
result<object_bytes> read_restore_snapshot(object_store& store, const std::string& key);

}  // namespace weir::tier
