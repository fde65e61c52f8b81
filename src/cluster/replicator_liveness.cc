// The replicator's leadership upkeep, run from its sweep: followers of a leader whose connection closed
// stand soon (watch_links); leaders tell their followers they lead (announce_leading, on_leading) and
// count any frame of a voter as a check-quorum contact (vouch_contacts); a new leader opens its term
// (open_terms); leaderships are spread over the nodes (balance). docs/replication.md, "Elections".
#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "cluster/links.h"
#include "cluster/replicator.h"
#include "cluster/replicator_group.h"
#include "raft/libraft.h"
#include "raft/node_io.h"

namespace weir::cluster {

using detail::message_channel;

namespace {
// balance(): how long after this node last saw unrest it hands no leadership over (at least five
// election timeouts), and the most bytes it may queue for a node it hands a leadership to.
constexpr std::int64_t balance_calm_ms = 10'000;
constexpr std::uint64_t balance_max_queued = 1u << 20;
}  // namespace

void replicator::watch_links() {
  // A peer whose connection to this node closed (its process died: the kernel closed its sockets) is
  // no leader to wait for. libraft refuses votes while it knows a leader, until its own election timer
  // expires 1-2 s after the last heartbeat, so the first survivor to stand is refused by the other and
  // failover took 2.3-4.7 s (tests/integration/cluster). For every group that peer led, forget the
  // leader and let the election timer expire within 50-500 ms (at random, so the survivors rarely stand
  // at once). Raft's safety does not rest on either: refusing votes while a leader is known only keeps
  // a removed or partitioned server from disrupting a live leader.
  for (const auto& l : links_.status()) {
    const bool was = peer_up_.count(l.peer) ? peer_up_[l.peer] : false;
    peer_up_[l.peer] = l.in_connected;
    if (!was || l.in_connected) continue;
    std::uniform_int_distribution<unsigned> soon(50, 500);
    for (auto& g : groups_) {
      ::raft& r = g->r;
      if (r.state != RAFT_FOLLOWER || r.follower_state.current_leader.id != l.peer) continue;
      r.follower_state.current_leader.id = 0;
      if (r.follower_state.current_leader.address != nullptr) {
        raft_free(r.follower_state.current_leader.address);
        r.follower_state.current_leader.address = nullptr;
      }
      g->link_closed_ms = ex_.now_ms();
      const unsigned timeout = r.follower_state.randomized_election_timeout;
      const unsigned left = std::min(timeout, soon(rng_));
      // On libraft's clock (see on_leading).
      r.election_timer_start = r.io->time(r.io) - (timeout - left);
    }
  }
}

// A group that replicates only large entries sends no heartbeat of libraft's (it sends one only after
// a heartbeat interval of sending nothing), and its entries wait in the peer queues behind the other
// groups' megabytes: a follower that hears nothing of its group for an election timeout stands, though
// packets from its leader's node keep arriving (seen under bursts of 512 KiB writes: docs/benchmarks.md,
// "Peer links: the heartbeat lane"). So each node says, on the urgent lane, which groups it leads and in
// which term; a follower of one of them that knows this node as its leader in that term restarts its election
// timer, as an AppendEntries would. Safety does not rest on timers; for liveness the message is as good as
// a heartbeat: only a node that leads the group in that term sends it (one that stepped down stops), and a
// follower that moved to a newer term ignores it. One message per peer and interval, whatever the number
// of groups (12 bytes each).
void replicator::announce_leading() {
  leading l;
  for (const auto& g : groups_)
    if (raft_state(&g->r) == RAFT_LEADER) l.groups.emplace_back(g->id, g->r.current_term);
  if (l.groups.empty()) return;
  const std::vector<std::byte> bytes = encode(message(l));
  for (const auto& peer : links_.status()) links_.send_urgent(peer.peer, message_channel, bytes);
}

void replicator::on_leading(std::uint64_t from, const leading& l) {
  for (const auto& [g, term] : l.groups) {
    group* found = find(g);
    if (found == nullptr) continue;
    ::raft& r = found->r;
    // A follower that knows no leader in this term yet (it voted, and the winner's first AppendEntries
    // has not arrived) learns here that the sender won it: Raft has one leader a term.
    if (r.state != RAFT_FOLLOWER || r.current_term != term) continue;
    const std::uint64_t known = r.follower_state.current_leader.id;
    if (known != from && known != 0) continue;
    // libraft's clock, not the executor's: node_io's clock leaves out this node's stalls (a SIGSTOP),
    // so the executor's is ahead of it, and a start in libraft's future reads as an expired timer.
    r.election_timer_start = std::max(r.election_timer_start, r.io->time(r.io));
  }
}

// libraft's leader steps down when fewer than a majority of the group's voters sent it a message of the
// group within an election timeout (check-quorum: raft_progress::recent_recv, cleared at each check).
// That window is a leader's tightest timer (its followers wait 1-2 timeouts), and under a burst its
// followers' AppendEntries results wait behind other groups' megabytes on the same links: leaders whose
// followers were all alive and answering stepped down, and each such loss is an election (most losses
// in docs/benchmarks.md, "Elections: check-quorum contacts under ASan"). Any frame from a node shows it is
// alive and reachable, so a voter heard from in the last heartbeat interval counts as a contact of every
// group led here. Safety does not rest on check-quorum: reads confirm leadership with a quorum round of
// the group's own messages, commits need a majority's match index, and a voter that moved to a newer
// term answers this leader's next AppendEntries with it. A node that stops sending stops counting
// within the interval, so a leader cut off from its majority still steps down.
void replicator::vouch_contacts() {
  const std::int64_t now = ex_.now_ms();
  for (auto& gp : groups_) {
    ::raft& r = gp->r;
    if (raft_state(&r) != RAFT_LEADER || r.leader_state.progress == nullptr) continue;
    for (unsigned i = 0; i < r.configuration.n; ++i) {
      const raft_server& srv = r.configuration.servers[i];
      if (srv.id == opts_.self || srv.role != RAFT_VOTER || r.leader_state.progress[i].recent_recv) continue;
      if (now - last_frame_from(srv.id) > static_cast<std::int64_t>(opts_.heartbeat_ms)) continue;
      r.leader_state.progress[i].recent_recv = true;
      ++contacts_vouched_;
    }
  }
}

std::int64_t replicator::last_frame_from(std::uint64_t node) const {
  auto it = message_ms_.find(node);
  const std::int64_t cluster_message = it == message_ms_.end() ? -1'000'000'000 : it->second;
  const std::int64_t raft_packet = io_->packet_from(raft::node_id(node));
  return std::max(cluster_message, raft_packet < 0 ? -1'000'000'000 : raft_packet);
}

// A new leader proposes a barrier at once: entries of earlier terms commit only with an entry of its
// own term (raft::node_io::clamp_old_term_result; Raft 5.4.2, and libraft >= 0.17 does the same), so
// without one, writes left by the previous leader would wait for the next client write or read.
void replicator::open_terms() {
  for (auto& g : groups_) {
    if (raft_state(&g->r) != RAFT_LEADER || g->opened_term == g->r.current_term) continue;
    using barrier_req = struct ::raft_barrier;
    auto* req = new barrier_req();
    if (raft_barrier(&g->r, req, [](barrier_req* r, int) { delete r; }) != 0) {
      delete req;
      continue;  // tried again at the next sweep
    }
    g->opened_term = g->r.current_term;
  }
}

// Under unrest (elections by timeout, leaders that lost their quorum: nodes starved of CPU or cut off,
// docs/replication.md "Elections") a hand-over is one more election among many, and the leadership it
// moves is likely to move again; so balancing waits until this node saw none for `balance_calm_ms`.
// Nor is a group handed to a node whose queue here is long: it lags, and would need that long to catch
// up before libraft sends it the TimeoutNow (the group takes no writes meanwhile).
void replicator::balance() {
  if (!opts_.balance_leaders) return;
  const std::int64_t now = ex_.now_ms();
  const std::int64_t calm_ms = std::max<std::int64_t>(balance_calm_ms, 5 * opts_.election_timeout_ms);
  if (now - leadership_->last_unrest_ms() < calm_ms) {
    if (std::any_of(groups_.begin(), groups_.end(),
                    [](const auto& g) { return raft_state(&g->r) == RAFT_LEADER; }))
      leadership_->count_balance_held();
    return;
  }
  std::map<std::uint64_t, bool> up = links_up(balance_max_queued);
  int started = 0;
  for (auto& g : groups_) {
    if (started >= 4) break;  // a few per second: a restarted node takes its share back gradually
    if (g->transferring || raft_state(&g->r) != RAFT_LEADER || now - g->last_transfer_ms < 10'000) continue;
    // While its membership changes, a group stays where it is (reconcile() moves a leader that leaves).
    if (g->changing || !settled(*g)) continue;
    // The group's voters, in id order (its configuration keeps the order nodes were added in).
    std::vector<std::uint64_t> ids;
    for (unsigned i = 0; i < g->r.configuration.n; ++i)
      if (g->r.configuration.servers[i].role == RAFT_VOTER) ids.push_back(g->r.configuration.servers[i].id);
    if (ids.size() < 2) continue;
    std::sort(ids.begin(), ids.end());
    const std::uint64_t preferred = ids[g->id % ids.size()];
    if (preferred == opts_.self || !up[preferred]) continue;
    g->transfer = {};
    g->transfer.data = g.get();
    g->last_transfer_ms = now;
    if (raft_transfer(&g->r, &g->transfer, preferred, &group_glue::transferred) == 0) {
      g->transferring = true;
      leadership_->count_handover();
      ++started;
    }
  }
}

}  // namespace weir::cluster
