// cold_index: which byte ranges of which streams live in which cold objects (docs/cold-tier.md, "The
// index"). It is replicated state: the uploader's report of an object becomes an index record in the
// group's log, and every replica applies the same records in the same order to the same index. Memory
// grows with objects, not with records: one extent per stream per object.
//
// apply() re-validates each record against the stream as the replica knows it, so that applying it is
// deterministic and a deposed leader's late record is harmless:
//   * a range of a stream that no longer exists, or one already cold (it ends at or before the stream's
//     cold end), is skipped;
//   * a range must start exactly at the stream's cold end (its first own offset while nothing is cold: a
//     fork's own bytes start at its fork point) with no gap and no overlap, and end at or before the
//     stream's durable tail; any other is refused, and its bytes simply stay local until a valid record
//     covers them.
// An object none of whose ranges applies is not recorded (its bytes are in no extent): the orphan sweep
// finds it by listing.
//
// The encoded form (snapshots) is fuzz-safe to decode: garbage is an error, never a crash or an
// unbounded allocation. Single-threaded (the partition's executor).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "base/string_map.h"
#include "streams/types.h"
#include "tier/uploader.h"

namespace weir::tier {

struct cold_object_ref {
  std::string key;
  std::uint64_t size = 0;
};

// Stream offsets [first, end) stored at data position [data_position, data_position + end - first) of an
// object.
struct cold_extent {
  streams::stream_offset first;
  streams::stream_offset end;
  std::uint32_t object = 0;  // in cold_index's object table
  std::uint64_t data_position = 0;
};

struct cold_apply_result {
  std::size_t applied = 0;  // ranges now in the index
  std::size_t skipped = 0;  // stale: the stream is gone, or the range is cold already
  std::size_t refused = 0;  // a gap, an overlap, or bytes past the stream's tail
  bool recorded = false;    // the object is in the table (at least one range applied)
};

// The index record: an uploaded object as it travels through the group's log to every replica (key,
// name, size and ranges). The decoder is fuzz-safe, and checks that the key is the name's and that the
// ranges lie in order inside a data region no larger than the object.
std::vector<std::byte> encode_index_record(const uploaded_object& u);
result<uploaded_object> decode_index_record(std::span<const std::byte> bytes);

class cold_index {
 public:
  // A stream as this replica knows it: its first own offset (0, or a fork's fork point) and its durable
  // tail. nullopt: no such stream.
  struct stream_span {
    streams::stream_offset base;
    streams::stream_offset tail;
  };
  using span_fn = std::function<std::optional<stream_span>(std::string_view stream)>;

  cold_apply_result apply(const uploaded_object& u, const span_fn& span_of);

  // The first offset of `stream` after its cold bytes; nullopt while none of them is cold.
  std::optional<streams::stream_offset> cold_end(std::string_view stream) const;
  // Where offset `at` of `stream` lives, if it is cold: the extent and its object.
  struct location {
    const cold_extent* extent = nullptr;
    const cold_object_ref* object = nullptr;
  };
  std::optional<location> find(std::string_view stream, streams::stream_offset at) const;
  // The stream is gone for good (deleted or expired, and no fork reads through it): its extents go. The
  // objects no extent names any more come back, for the collector (after its grace period).
  std::vector<cold_object_ref> drop_stream(std::string_view stream);
  // An extent names the object `key` (the orphan sweep keeps what the index names).
  bool names(std::string_view key) const { return keys_.find(key) != keys_.end(); }
  // Every object key an extent names (a restore snapshot keeps them from the sweep).
  std::vector<std::string> object_keys() const;
  // Calls `fn` with each stream that has cold bytes and its cold end.
  void for_each_cold_end(const std::function<void(std::string_view, streams::stream_offset)>& fn) const;

  std::size_t objects() const { return live_objects_; }
  std::size_t extents() const { return extents_; }
  std::size_t streams() const { return streams_.size(); }

  // A cluster's group snapshots (replica/group_snapshot.h): the extents of the streams `in_part`
  // accepts (a raft group's), with the objects they name; and the restore of such a part, which replaces
  // the extents of every stream `in_part` accepts with `part`'s (streams `part` holds that `in_part` does
  // not accept are ignored: a snapshot never reaches outside its group).
  using stream_predicate = std::function<bool(std::string_view stream)>;
  cold_index part(const stream_predicate& in_part) const;
  void replace_part(const stream_predicate& in_part, const cold_index& part);

  // Snapshots: the whole index, and its inverse.
  std::vector<std::byte> encode() const;
  static result<cold_index> decode(std::span<const std::byte> bytes);

  bool operator==(const cold_index& o) const;

 private:
  struct object_slot {
    cold_object_ref ref;
    std::uint32_t extents = 0;  // 0: free slot
  };
  std::uint32_t add_object(const uploaded_object& u) { return add_slot(cold_object_ref{u.key, u.size}); }
  std::uint32_t add_slot(cold_object_ref ref);
  // Appends `from`'s extents of one stream (their objects in `from`'s table) to `stream`'s, each object
  // given a slot here once (`slots`: from's slot -> this one's, filled as they are added).
  void copy_extents(const std::string& stream, const std::vector<cold_extent>& extents,
                    const cold_index& from, std::unordered_map<std::uint32_t, std::uint32_t>& slots);

  string_map<std::vector<cold_extent>> streams_;  // extents in offset order, contiguous
  std::vector<object_slot> objects_;
  std::vector<std::uint32_t> free_slots_;
  string_map<std::uint32_t> keys_;  // live slots per object key (derived from objects_: not encoded)
  std::size_t live_objects_ = 0;
  std::size_t extents_ = 0;
};

}  // namespace weir::tier
