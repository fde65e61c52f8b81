// group_snapshot: the state a cluster node's raft group snapshots (docs/replication.md, "Snapshots"):
// its part of the streams state machine (streams::state_machine::snapshot_part: metadata, and each
// record either as a reference into this node's data log or inline) and its part of the subscriptions
// (subscriptions::subscription_replica::snapshot_part).
//
//   u8 version (1) | u32 streams length | streams part | u32 subscriptions length | subscriptions part
//
// Little-endian. Decoding is strict (a length past the end, a byte left over, another version: an
// error). Pure functions.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "base/result.h"

namespace weir::replica {

struct group_snapshot_view {
  std::span<const std::byte> streams;
  std::span<const std::byte> subscriptions;
};

std::vector<std::byte> encode_group_snapshot(std::span<const std::byte> streams,
                                             std::span<const std::byte> subscriptions);
// Views into `in`.
result<group_snapshot_view> decode_group_snapshot(std::span<const std::byte> in);

}  // namespace weir::replica
