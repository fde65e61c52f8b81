// object_key: the name of one cold object, relative to the cold location's prefix:
//
//   e<epoch>/g<group>/t<term>-s<seq>.obj        e.g. e0001/g00000003/t0000000000000005-s0000000000000012.obj
//
// epoch: bumped by a restore, so objects written after a restore never collide with the ones before it;
// group: the raft group (or lane) whose data the object holds; term: the uploading leader's term; seq: the
// leader's upload sequence within that term. Two leaders never share a term, and a leader never reuses a
// sequence, so a key is never written twice with different bytes: a retry re-sends the same bytes under
// the same key (docs/cold-tier.md, "Keys"). Numbers are lower-case hex of fixed width, so the lexical
// order that ListObjectsV2 returns is the numeric order, and a listing of e<epoch>/g<group>/ walks a
// group's objects by term and sequence.
//
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/strong_id.h"

namespace weir::tier {

using cold_epoch = strong_id<struct cold_epoch_tag, std::uint16_t>;
using cold_group = strong_id<struct cold_group_tag, std::uint32_t>;
using leader_term = strong_id<struct leader_term_tag, std::uint64_t>;
using upload_seq = strong_id<struct upload_seq_tag, std::uint64_t>;

struct object_name {
  cold_epoch epoch;
  cold_group group;
  leader_term term;
  upload_seq seq;
  auto operator<=>(const object_name&) const = default;
};

std::string object_key(const object_name& n);
// The inverse of object_key(); nullopt for any other string (an orphan sweep ignores foreign keys).
std::optional<object_name> parse_object_key(std::string_view key);
// "e<epoch>/g<group>/": the listing prefix of one group's objects in one epoch.
std::string group_key_prefix(cold_epoch epoch, cold_group group);
// "e<epoch>/".
std::string epoch_key_prefix(cold_epoch epoch);

// A group's restore snapshot (docs/cold-tier.md, "Restore"), beside the objects of its epoch:
//
//   e<epoch>/snap/g<group>/t<term>-s<seq>.snap
//
// named like an object by the uploading leader's term and a sequence of its own, so that a listing of
// e<epoch>/snap/ walks each group's snapshots oldest first. An object listing (e<epoch>/g<group>/) never
// sees them, and parse_object_key refuses them.
std::string snapshot_key(const object_name& n);
std::optional<object_name> parse_snapshot_key(std::string_view key);
// A part of a snapshot too large for one object (tier/restore_snapshot.h), numbered from 0:
//
//   e<epoch>/snap/g<group>/t<term>-s<seq>.part<part, 8 hex digits>
//
// parse_snapshot_key refuses it, so a listing's snapshots are their heads only.
struct snapshot_part_name {
  object_name snapshot;
  std::uint32_t part = 0;
  auto operator<=>(const snapshot_part_name&) const = default;
};
std::string snapshot_part_key(const object_name& n, std::uint32_t part);
std::optional<snapshot_part_name> parse_snapshot_part_key(std::string_view key);
// "e<epoch>/snap/": every group's snapshots of one epoch; "e<epoch>/snap/g<group>/": one group's.
std::string snapshot_key_prefix(cold_epoch epoch);
std::string snapshot_key_prefix(cold_epoch epoch, cold_group group);

}  // namespace weir::tier
