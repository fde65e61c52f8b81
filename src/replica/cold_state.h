// cold_state: the cold tier's part of a partition's replicated state (docs/cold-tier.md, "The index"):
// the index of which stream bytes live in which objects, kept in step with the state machine by the same
// log. On a single node the index records are records of the write-ahead log (cold_index_record_type)
// between its commands, so that a replay applies them where they were applied first; a checkpoint holds
// the index beside the state machine's snapshot (encode_checkpoint).
//
// Pure functions over the state machine and the index; the caller's thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "streams/command.h"
#include "streams/state_machine.h"
#include "tier/cold_index.h"

namespace weir::replica {

// The write-ahead log's record type of an index record (streams::command_record_type is 1). A log that
// holds one is not read by a weir that does not know it (its recovery stops at an unknown type rather
// than lose the index).
inline constexpr std::uint8_t cold_index_record_type = 2;

// Applies an index record (tier::encode_index_record) to `index`, each range checked against the
// stream as `sm` holds it: its first own offset (a fork's fork point) and its tail. An undecodable record
// changes nothing (the error says why). `touched` (optional) gets the streams of the record's ranges.
result<tier::cold_apply_result> apply_index_record(tier::cold_index& index, const streams::state_machine& sm,
                                                   std::span<const std::byte> record,
                                                   std::vector<std::string>* touched = nullptr);

// After `c` was applied to `sm` with outcome `o`: a stream just created has no cold bytes (a stream of
// the same path before it may have had), and a stream that no longer exists at all keeps none (a
// soft-deleted source that forks still read keeps its extents). The same on every replay.
void follow_command(tier::cold_index& index, const streams::state_machine& sm, const streams::command& c,
                    const streams::outcome& o);

// A checkpoint's blob: the state machine's snapshot alone while the index is empty (what a weir without
// a cold tier writes and reads), else both in a container ("weircold" | var version | var sm length | sm
// | index). decode_checkpoint accepts both forms.
std::vector<std::byte> encode_checkpoint(std::vector<std::byte> sm_snapshot, const tier::cold_index& index);
// The index's part of a checkpoint: empty while the index is (then the blob is the snapshot alone).
std::vector<std::byte> checkpoint_index(const tier::cold_index& index);
// The same from an index already encoded (a checkpoint's own index part: decode_checkpoint); empty:
// the state machine's snapshot alone.
std::vector<std::byte> encode_checkpoint(std::vector<std::byte> sm_snapshot,
                                         std::span<const std::byte> index);
struct checkpoint_parts {
  std::span<const std::byte> sm;
  std::span<const std::byte> index;  // empty: no cold bytes
};
result<checkpoint_parts> decode_checkpoint(std::span<const std::byte> blob);

// Restores both from a checkpoint's blob (decode_checkpoint, then each part).
status restore_checkpoint(std::span<const std::byte> blob, streams::state_machine& sm,
                          tier::cold_index& index);

}  // namespace weir::replica
