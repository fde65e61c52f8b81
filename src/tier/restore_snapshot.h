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
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <span>

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

object_bytes encode_restore_snapshot(const restore_snapshot_header& h, std::span<const std::byte> state);

struct restore_snapshot_view {
  restore_snapshot_header header;
  std::span<const std::byte> state;  // into the decoded bytes
};
// Checks the magic, version, both CRCs and the header's values (groups > group); object_format_errc
// errors with a reason otherwise. Never reads outside `object`.
result<restore_snapshot_view> decode_restore_snapshot(std::span<const std::byte> object);

}  // namespace weir::tier
