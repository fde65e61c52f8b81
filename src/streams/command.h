// Commands: every state change of a stream is one of these, applied by state_machine. Time comes
// inside the command (the state machine reads no clock), so applying the same commands in the same
// order gives the same state: a write-ahead log can replay them and Raft can replicate them. Each
// command has a compact binary encoding (command_codec.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "streams/types.h"

namespace weir::streams {

class memory_log;

// Cluster mode: where a fork's source stood when the fork was made: the source's raft group and the
// index at which its fork_retain was applied there (the source's data before the fork point is at or
// below it). A node serves a read of the fork only once that group has applied that far on it
// (docs/replication.md, "Forks"). Written by the proposing node into the fork's create.
struct fork_origin {
  std::uint32_t group = 0;
  std::uint64_t index = 0;
  bool operator==(const fork_origin&) const = default;
};

// What the fork's core learned from the source's core (fork_retain) before creating the fork.
struct fork_resolution {
  stream_offset point{};  // divergence point in the source's offset space
  // The source's log, which the fork reads its records before `point` from (nothing is copied). Not
  // encoded: on replay, recovery links the fork to its source again (state_machine::stitch_fork).
  std::shared_ptr<const memory_log> source_log;
  payload prefix;  // the materialized sub-offset prefix (PROTOCOL.md 4.2), maybe empty
  std::string source_content_type;
  expiry_config source_expiry;
  bool retained = false;  // the source's reference count was taken for this fork (fork_retain)
  // Cluster mode: the retain's place (set by the proposing node from the retain's apply). Absent on a
  // single node, and in creates written before it existed: such a fork's reads wait for nothing more.
  std::optional<fork_origin> origin;
};

struct fork_spec {
  std::string source;                   // Stream-Forked-From (a path on this server)
  std::optional<stream_offset> offset;  // Stream-Fork-Offset as requested (default: source tail)
  std::uint64_t sub_offset = 0;         // Stream-Fork-Sub-Offset
  fork_resolution resolved;
};

// PUT: create a stream (or confirm it exists with the same configuration).
struct create_command {
  std::string path;
  std::string content_type;  // as sent; empty: default (or the source's, for a fork)
  expiry_config expiry;
  bool closed = false;
  payload initial;
  std::optional<fork_spec> fork;
  std::int64_t now_ms = 0;
};

// POST: append (optionally closing), or close only (close && body empty).
struct append_command {
  std::string path;
  std::optional<std::string> content_type;  // absent when the request had none
  payload body;
  std::optional<std::string> stream_seq;  // Stream-Seq
  std::optional<producer_ref> producer;   // Producer-Id/Epoch/Seq
  bool close = false;                     // Stream-Closed: true
  std::int64_t now_ms = 0;
};

// DELETE.
struct delete_command {
  std::string path;
  std::int64_t now_ms = 0;
  // deleted-path-hold-ms when the delete was asked: the path cannot be re-created before now_ms + hold_ms
  // (PROTOCOL.md 1: a new stream SHOULD NOT be created at a deleted stream's URL). In the command, not in
  // the state machine's settings, so that a replay or a replica decides exactly as the original did.
  std::int64_t hold_ms = 0;
};

// A read or live wait began: renews a sliding TTL (PROTOCOL.md 5.1, Stream-TTL).
struct touch_command {
  std::string path;
  std::int64_t now_ms = 0;
};

// Expire the stream if its TTL or Expires-At has passed (sweeper, or before a HEAD).
struct expire_command {
  std::string path;
  std::int64_t now_ms = 0;
};

// The record that begins at a fork point, as the node that proposes the retain read it (from an object's
// record table, or from its own records: docs/cold-tier.md, "Forks"), so that every replica applies the
// same answer without the records it may have forgotten: where it ends and, in a JSON stream, how many
// messages it holds.
struct carried_record {
  stream_offset end;
  std::uint32_t messages = 0;  // JSON
  friend bool operator==(const carried_record&, const carried_record&) = default;
};

// Applied on the source's core when a fork is being created: validate, take a reference.
struct fork_retain_command {
  std::string source;
  std::optional<stream_offset> offset;
  std::uint64_t sub_offset = 0;
  std::string content_type;  // the fork request's Content-Type (empty: inherit)
  std::int64_t now_ms = 0;
  // Cluster mode: the fork's path, kept with the reference so that a sweep can look for the fork in its
  // own group (docs/replication.md, "Forks"). Empty on a single node and in retains written before it.
  std::string fork;
  // The record that begins at the fork point, as the proposing node read it: when the point is inside
  // bytes in objects, from an object's record table (state_machine::fork_retain checks it against the
  // replicated index); when `record_decides`, from its own records or else a record table.
  std::optional<carried_record> point_record;
  // Set by the proposing node when the stream whose own bytes hold the point (the source, or a source up
  // its chain of forks) applies its commands in another log than this retain: another raft group or lane
  // of a cluster, another core of a single node. What a replica has applied of that other log, and which
  // of its records it still keeps, differ from node to node and from a first apply to a replay, so
  // whether a record begins at the point (and the record a sub-offset cuts) is then decided by
  // `point_record` alone (state_machine::fork_retain).
  bool record_decides = false;
};

// Applied on the source's core when a fork went away (or its creation failed): drop the reference,
// and clean up a soft-deleted source whose last fork is gone (PROTOCOL.md 4.2, cascading GC). In a
// cluster it is an entry of the source's group (stream_shard::release, or the fork sweep), so the
// references are part of the source group's state.
struct fork_release_command {
  std::string source;
  // Cluster mode: the reference given back, named by its retain's place (fork_resolution::origin, unique
  // per fork). Applying it twice changes nothing, so a release whose outcome is unknown may be proposed
  // again, by any node. Absent on a single node and for forks created without an origin: an anonymous
  // reference is given back (a count, as before origins existed).
  std::optional<fork_origin> origin;
};

// Cluster mode, an entry of the fork's group, proposed by the fork sweep (docs/replication.md, "Forks")
// for a reference whose fork it did not find: unless a fork at `path` with `origin` exists when it is
// applied, `origin` is recorded as dead there, and a fork create carrying it applied later is refused
// (the same on every node), so a create still in some log cannot bring the fork back once its
// reference is released. Tombstones are forgotten fork_tombstone_horizon_ms after they were made.
struct fork_tombstone_command {
  std::string path;  // the fork's (the entry goes to the fork's group)
  fork_origin origin;
  std::uint32_t group = 0;  // the fork's group: a tombstone's apply forgets that group's old tombstones
  std::int64_t now_ms = 0;
};

using command = std::variant<create_command, append_command, delete_command, touch_command, expire_command,
                             fork_retain_command, fork_release_command, fork_tombstone_command>;

// The path of the stream a command addresses (which core owns it).
const std::string& command_path(const command& c);
// The stream data a command carries (an append's body, a create's initial data; not a fork's prefix),
// or nullptr.
const payload* command_data(const command& c);

}  // namespace weir::streams
