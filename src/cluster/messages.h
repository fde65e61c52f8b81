// messages: what nodes tell each other besides raft's own frames (channel 1 of peer_links), and the
// header every replicated command carries. docs/replication-formats.md, "Cluster messages", has the layout.
//
//   forward        a write that reached a follower, sent to the group's leader to propose
//   forward_reject the leader did not propose it (not the leader any more: retry elsewhere), or proposed
//                  it and lost leadership before it committed (the outcome is unknown)
//   read_request   a follower asks the leader for a read index (ReadIndex, Raft thesis 6.4)
//   read_reply     the index, once the leader confirmed with a quorum that it still leads
//   leader_call    a request for what a group's leader serves (a subscription's control request), sent to
//                  the node believed to lead the group
//   leader_reply   its answer, or "not the leader" (nothing ran: ask the leader it names)
//   leading        the groups this node leads, with their terms, sent to every peer each heartbeat
//                  interval on the urgent lane: a follower of one of them whose leader is this node in
//                  that term restarts its election timer, as an AppendEntries would (a group that only
//                  replicates large entries sends no heartbeat of libraft's, and its entries may wait
//                  behind other groups' megabytes: docs/replication.md, "Elections")
//   membership     the membership group 0 committed (POST/DELETE /cluster/members), sent to every peer
//                  every few seconds: how a node that is no voter of group 0 (one started with --join)
//                  learns its peers' addresses
//
// Decoding is a pure function over bytes from another node: malformed input is an error, never a crash
// (fuzzed by tests/fuzz/cluster_message_fuzz.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "base/result.h"

namespace weir::cluster {

// What the command of an entry is (replica::raft_lane's apply dispatches on it).
enum class entry_kind : std::uint8_t {
  streams = 1,        // a streams command (streams/command_codec)
  subscriptions = 2,  // a subscription change (subscriptions/subscription_replica.h)
  membership = 3,     // group 0 only: a membership change (cluster/membership.h), applied by the replicator
  cold_index = 4,     // the cold tier's index record of an uploaded object (tier::encode_index_record)
};

// The header of every command entry in a group's raft log: which node proposed it, the ticket that node
// waits on (0: nobody waits) and what the command that follows is.
struct entry_header {
  std::uint64_t origin = 0;
  std::uint64_t ticket = 0;
  entry_kind kind = entry_kind::streams;
};
inline constexpr std::size_t entry_header_size = 17;

std::vector<std::byte> encode_entry(entry_header h, std::span<const std::byte> command);
// Splits an entry into its header and its command (a view into `entry`).
result<std::pair<entry_header, std::span<const std::byte>>> decode_entry(std::span<const std::byte> entry);

struct forward {
  std::uint32_t group = 0;
  std::span<const std::byte> entry;  // header + command, proposed as is
};
enum class reject_reason : std::uint8_t {
  not_leader = 1,  // nothing was proposed: safe to send again
  lost = 2,        // proposed, then leadership was lost: it may or may not commit
};
struct forward_reject {
  std::uint64_t ticket = 0;
  reject_reason reason = reject_reason::not_leader;
  std::uint64_t leader = 0;  // the leader this node knows of, 0 if none
};
struct read_request {
  std::uint32_t group = 0;
  std::uint64_t id = 0;
};
struct read_reply {
  std::uint64_t id = 0;
  bool ok = false;
  std::uint64_t index = 0;   // apply up to here, then read
  std::uint64_t leader = 0;  // when !ok: the leader this node knows of, 0 if none
};

// The desired membership (cluster/membership.h): every node of it, by id, with its peer address. A
// higher epoch supersedes a lower one.
struct membership_update {
  std::uint64_t epoch = 0;
  std::map<std::uint64_t, std::string> members;  // id (from 1) -> "HOST:PORT", non-empty
};

struct leader_call {
  std::uint64_t id = 0;
  std::uint32_t group = 0;
  std::span<const std::byte> request;  // the rest of the message
};
struct leader_reply {
  std::uint64_t id = 0;
  bool served = false;                // false: this node does not lead the group; nothing ran
  std::uint64_t leader = 0;           // when !served: the leader this node knows of, 0 if none
  std::span<const std::byte> answer;  // the rest of the message; empty when !served
};

// The groups the sender leads, each with its term.
struct leading {
  std::vector<std::pair<std::uint32_t, std::uint64_t>> groups;
};

using message = std::variant<forward, forward_reject, read_request, read_reply, membership_update,
                             leader_call, leader_reply, leading>;

std::vector<std::byte> encode(const message& m);
// The decoded message points into `bytes` (forward::entry, leader_call::request, leader_reply::answer).
result<message> decode(std::span<const std::byte> bytes);

}  // namespace weir::cluster
