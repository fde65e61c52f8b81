// replicator::after_event: the replicator's side of replicator_leadership.h: after each tick or message
// of a group, what changed in its leadership on this node and why (docs/replication.md, "Elections").
#include <fmt/format.h>

#include "cluster/replicator.h"
#include "cluster/replicator_group.h"
#include "raft/libraft.h"
#include "raft/node_io.h"

namespace weir::cluster {

namespace {
raft_role role_of(const ::raft& r) {
  switch (r.state) {
    case RAFT_FOLLOWER:
      return raft_role::follower;
    case RAFT_CANDIDATE:
      return raft_role::candidate;
    case RAFT_LEADER:
      return raft_role::leader;
    default:
      return raft_role::unavailable;
  }
}

std::string_view message_name(std::uint8_t type) {
  switch (type) {
    case RAFT_IO_APPEND_ENTRIES:
      return "AppendEntries";
    case RAFT_IO_APPEND_ENTRIES_RESULT:
      return "AppendEntries result";
    case RAFT_IO_REQUEST_VOTE:
      return "RequestVote";
    case RAFT_IO_REQUEST_VOTE_RESULT:
      return "RequestVote result";
    case RAFT_IO_INSTALL_SNAPSHOT:
      return "InstallSnapshot";
    case RAFT_IO_TIMEOUT_NOW:
      return "TimeoutNow";
    default:
      return "message";
  }
}

std::string ago(std::int64_t now, std::int64_t then) {
  return then < 0 ? std::string("never") : fmt::format("{} ms ago", now - then);
}
}  // namespace

// When each other voter of the group was last heard from in it: why a leader lost its quorum.
std::string replicator::quorum_detail(std::uint32_t gi) const {
  const ::raft& r = find(gi)->r;  // after_event's group: this lane's
  const std::int64_t now = ex_.now_ms();
  std::string out = "last heard in this group from";
  for (unsigned i = 0; i < r.configuration.n; ++i) {
    const raft_server& srv = r.configuration.servers[i];
    if (srv.id == opts_.self || srv.role != RAFT_VOTER) continue;
    out += fmt::format(" node {} {} (any packet {}),", srv.id,
                       ago(now, io_->heard_from(raft::group_id(gi), raft::node_id(srv.id))),
                       ago(now, io_->packet_from(raft::node_id(srv.id))));
  }
  if (!out.empty() && out.back() == ',') out.pop_back();
  return out;
}

void replicator::after_event(std::uint32_t gi, std::uint64_t from, std::uint8_t type) {
  group* found = find(gi);
  if (found == nullptr) return;
  group& g = *found;
  auto t = leadership_->observe(gi, {role_of(g.r), g.r.current_term, leader_of(gi)});
  if (!t) return;
  const std::int64_t now = ex_.now_ms();
  leadership_cause cause = leadership_cause::unknown;
  std::string detail;
  if (t->election_started) {
    if (from != 0 && type == RAFT_IO_TIMEOUT_NOW) {
      cause = leadership_cause::transfer;
      detail = fmt::format("a TimeoutNow from node {}", from);
    } else if (from == 0 && g.link_closed_ms >= 0 && now - g.link_closed_ms < 2 * opts_.election_timeout_ms) {
      cause = leadership_cause::link_closed;
      detail = fmt::format("node {}'s connection to this node closed {} ms ago", t->previous_leader,
                           now - g.link_closed_ms);
    } else if (from == 0) {
      cause = leadership_cause::timeout;
      const std::uint64_t l = t->previous_leader;
      if (t->before.role == raft_role::candidate) {
        detail = fmt::format("the election of term {} won no majority in time", t->before.term);
      } else if (l != 0 && l != opts_.self) {
        detail = fmt::format("nothing of this group from node {} {} (any packet from it {}); loop stalls {}",
                             l, ago(now, io_->heard_from(raft::group_id(gi), raft::node_id(l))),
                             ago(now, io_->packet_from(raft::node_id(l))), io_->counters().stalls);
      } else {
        detail = "no leader known";
      }
    }
  } else if (t->lost) {
    if (g.transferring) {
      cause = leadership_cause::transfer;
      detail = from != 0 ? fmt::format("handed over: a {} of term {} from node {}", message_name(type),
                                       t->after.term, from)
                         : std::string("handed over");
    } else if (from == 0) {
      cause = leadership_cause::quorum_lost;
      detail = quorum_detail(gi);
    } else if (t->after.term > t->before.term) {
      cause = leadership_cause::higher_term;
      detail = fmt::format("a {} of term {} from node {}", message_name(type), t->after.term, from);
    }
  } else if (t->won) {
    cause = leadership_cause::won;
  }
  leadership_->record(*t, cause, detail, now);
}

}  // namespace weir::cluster
