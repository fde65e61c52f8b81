// membership: the nodes a cluster was asked to consist of (POST and DELETE /cluster/members,
// docs/operations.md "Cluster"), as opposed to what each raft group's configuration says right now. A
// change is an entry of group 0 (membership_change, entry kind membership): every node applies it in log
// order with apply_change, which accepts it only if it was made against the membership group 0 had
// committed at that point, so two changes made at once are decided one after the other, never lost.
// Every node keeps the result in `<data-dir>/raft/members`, and the leader of each group brings the
// group's configuration to it one change at a time (replicator.h).
//
// On disk, a small text file (temp file, fsync, rename, directory fsync):
//
//     # weir: the membership this cluster was asked to have (docs/operations.md, "Cluster")
//     epoch = 2
//     members = 1=10.0.0.1:5437,2=10.0.0.2:5437,4=10.0.0.4:5437
//
// Epoch 0 with no members is what a node started with --join writes before it knows the cluster: the
// file's presence alone tells a later start not to bootstrap its groups.
//
// Pure functions, plus load/store through storage::env (blocking: start-up, and the rare change, on the
// replicator's loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "storage/env.h"

namespace weir::cluster {

enum class membership_errc : int {
  invalid = 1,      // a change that cannot be made (bad id or address, too many nodes, not a member...)
  unknown,          // this node does not know the membership yet (it waits to be added)
  io_error,         // the members file could not be read or written
  corrupt,          // the members file does not read as a membership
  stale,            // group 0 decided another change first: the change was made against an older membership
  no_quorum,        // group 0 could not be reached: nothing was changed
  outcome_unknown,  // proposed, then group 0's leader was lost: the change may or may not be made
};

inline const char* errc_name(membership_errc e) {
  switch (e) {
    case membership_errc::invalid:
      return "invalid";
    case membership_errc::unknown:
      return "unknown";
    case membership_errc::io_error:
      return "io_error";
    case membership_errc::corrupt:
      return "corrupt";
    case membership_errc::stale:
      return "stale";
    case membership_errc::no_quorum:
      return "no_quorum";
    case membership_errc::outcome_unknown:
      return "outcome_unknown";
  }
  return "unknown code";
}

inline const std::error_category& error_category_of(membership_errc) {
  static const named_error_category<membership_errc> c("cluster");
  return c;
}

struct membership {
  // Every change adds one; 0: no change was ever asked for (the groups keep the configuration they were
  // bootstrapped with, the --peers list).
  std::uint64_t epoch = 0;
  std::map<std::uint64_t, std::string> members;  // node id -> peer address "HOST:PORT"
  bool operator==(const membership&) const = default;
};

inline constexpr std::string_view members_file_name = "members";

// `a` replaces `b` (a membership from a peer's message, for a node that is no voter of group 0): a
// higher epoch, or, at the same epoch, the greater member list, so that every node settles on the same
// one. (Since changes are decided by group 0, one epoch has one member list; an older version's message
// changes could give two.)
bool supersedes(const membership& a, const membership& b);

// `base` with node `id` at `address` (normalised "HOST:PORT", IPv4 or localhost), as the next epoch.
// Adding a member again at the same address gives `base` again with the next epoch (a re-post reaches
// the nodes that missed it); at another address it is refused: remove it first.
result<membership> with_member(const membership& base, std::uint64_t id, std::string_view address);
// `base` without node `id`, as the next epoch; refused when `id` is not a member or is the last one.
result<membership> without_member(const membership& base, std::uint64_t id);

// A membership from another node is usable: ids from 1, normalised IPv4 (or localhost) addresses, no
// address twice, at most max_nodes members, and some members unless the epoch is 0.
status check_membership(const membership& m);

// A membership change as group 0's log carries it (docs/replication-formats.md, "Cluster messages"): what to
// do, and the membership the proposing node saw, which the change is made against when it is applied.
struct membership_change {
  enum class op : std::uint8_t { add = 1, remove = 2 };
  op what = op::add;
  std::uint64_t id = 0;
  std::string address;  // add: the normalised "HOST:PORT"; remove: empty
  membership base;
  bool operator==(const membership_change&) const = default;
};

// Canonical and strict: decode(encode(c)) == c, and a decoded change re-encodes to its bytes.
std::vector<std::byte> encode_membership_change(const membership_change& c);
result<membership_change> decode_membership_change(std::span<const std::byte> bytes);

// The apply rule, run by every node on every membership entry of group 0 in log order. `committed` is
// what group 0 has decided so far (nullopt: nothing yet, on a cluster whose membership never changed
// through raft; the change's own base then stands for it). A change made against anything else than
// `committed` is refused as stale (the client gets 409 and sends it again); otherwise with_member or
// without_member decides (invalid: 400), and the result is the next membership.
result<membership> apply_change(const std::optional<membership>& committed, const membership_change& c);

// The binary form of a membership (u64 epoch, u16 count, then per member u64 id, u16 length, address).
// Strict, as decode_membership_change.
std::vector<std::byte> encode_membership(const membership& m);
result<membership> decode_membership(std::span<const std::byte> bytes);

// The nodes group 0's decisions removed and did not add back, each with the epoch of its removal and the
// address it had: what tells a node that was removed (it may have been down through its removal, and
// knocks when it starts again) from one that was never added (a new node waiting for its addition).
// At most max_departures, the latest removals.
struct departure {
  std::uint64_t epoch = 0;
  std::string address;
  bool operator==(const departure&) const = default;
};
using departures = std::map<std::uint64_t, departure>;  // node id -> its removal
inline constexpr std::size_t max_departures = 64;

// Updates `d` for a decision that took the cluster from `before` to `after`: the nodes that left are
// noted (epoch after.epoch), the nodes that are members again are forgotten.
void note_departures(const membership& before, const membership& after, departures& d);

// What group 0 has decided, as its snapshot carries it (replicator_group.h): the committed membership,
// then, when some node was removed, u16 count (> 0) and per departure (ids increasing from 1) u64 id, u64
// epoch, u16 length, address. Without departures it is encode_membership's bytes (as snapshots of
// versions before departures were kept). Strict, as decode_membership_change.
struct decided_membership {
  membership committed;
  departures departed;
  bool operator==(const decided_membership&) const = default;
};
std::vector<std::byte> encode_decided(const decided_membership& d);
result<decided_membership> decode_decided(std::span<const std::byte> bytes);

std::string format_membership(const membership& m);
result<membership> parse_membership(std::string_view text);

// nullopt when the file does not exist. store_membership writes into an existing directory.
result<std::optional<membership>> load_membership(storage::env& e, const std::string& path);
status store_membership(storage::env& e, const std::string& path, const membership& m);

}  // namespace weir::cluster
