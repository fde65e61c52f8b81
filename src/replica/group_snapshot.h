// group_snapshot: the state a cluster node's raft group snapshots (docs/replication.md, "Snapshots"):
// its part of the streams state machine (streams::state_machine::snapshot_part: metadata, and each
// record either as a reference into this node's data log or inline) and its part of the subscriptions
// (subscriptions::subscription_replica::snapshot_part) and, on a node with a cold tier, its part of the
// cold index (tier::cold_index::part: which of its streams' bytes live in which objects, so that a snapshot
// carries object references instead of the bytes a node may have dropped).
//
//   version 1: u8 1 | u32 streams length | streams part | u32 subscriptions length | subscriptions part
//   version 2: version 1's parts (u8 2 first) | u32 cold index length | cold index part
//
// A snapshot without cold data is written as version 1, so that a cluster without a cold tier writes
// what a node that predates the cold tier reads.
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
  std::span<const std::byte> cold;  // empty: no cold data (version 1)
};

std::vector<std::byte> encode_group_snapshot(std::span<const std::byte> streams,
                                             std::span<const std::byte> subscriptions,
                                             std::span<const std::byte> cold = {});
// Views into `in`.
result<group_snapshot_view> decode_group_snapshot(std::span<const std::byte> in);

}  // namespace weir::replica
