// membership: the nodes a cluster was asked to consist of (POST and DELETE /cluster/members,
// docs/operations.md "Cluster"), as opposed to what each raft group's configuration says right now. The
// node that takes a change sends the new membership to every peer; every node keeps it in
// `<data-dir>/raft/members`, and the leader of each group brings the group's configuration to it one
// change at a time (replicator.h).
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

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "storage/env.h"

namespace weir::cluster {

enum class membership_errc : int {
  invalid = 1,  // a change that cannot be made (bad id or address, too many nodes, not a member...)
  unknown,      // this node does not know the membership yet (it waits to be added)
  io_error,     // the members file could not be read or written
  corrupt,      // the members file does not read as a membership
};

struct membership {
  // Every change adds one; 0: no change was ever asked for (the groups keep the configuration they were
  // bootstrapped with, the --peers list).
  std::uint64_t epoch = 0;
  std::map<std::uint64_t, std::string> members;  // node id -> peer address "HOST:PORT"
  bool operator==(const membership&) const = default;
};

inline constexpr std::string_view members_file_name = "members";

// `a` replaces `b`: a higher epoch, or, at the same epoch (two changes taken by two nodes at once), the
// greater member list, so that every node settles on the same one.
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

std::string format_membership(const membership& m);
result<membership> parse_membership(std::string_view text);

// nullopt when the file does not exist. store_membership writes into an existing directory.
result<std::optional<membership>> load_membership(storage::env& e, const std::string& path);
status store_membership(storage::env& e, const std::string& path, const membership& m);

}  // namespace weir::cluster
