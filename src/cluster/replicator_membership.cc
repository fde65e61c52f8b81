// The replicator's membership changes (docs/operations.md, "Adding, removing and replacing nodes"):
// changes decided by group 0's log, the desired membership that follows them (kept in
// <data-dir>/raft/members and shared with every peer), and each group's configuration brought there by
// its leader one change at a time.
#include "cluster/replicator.h"

#include <algorithm>

#include "cluster/links.h"
#include "cluster/replicator_group.h"
#include "raft/node_io.h"

namespace weir::cluster {

using detail::change_retry_ms;
using detail::find_server;
using detail::max_changes_in_flight;
using detail::share_every_ms;
using detail::to_message;

namespace {
// How often a removed node that knocks is linked again to be told it left (on_stranger).
constexpr std::int64_t farewell_again_ms = 30'000;
}  // namespace

std::map<std::uint64_t, bool> replicator::links_up(std::uint64_t max_queued) const {
  std::map<std::uint64_t, bool> up;
  for (const auto& l : links_.status())
    up[l.peer] = l.out_connected && l.in_connected && l.queued_bytes <= max_queued;
  return up;
}

// ---- Membership ----

void replicator::add_member(std::uint64_t id, std::string_view address, membership_done done) {
  propose_change(membership_change{membership_change::op::add, id, std::string(address), {}},
                 std::move(done));
}

void replicator::remove_member(std::uint64_t id, membership_done done) {
  propose_change(membership_change{membership_change::op::remove, id, {}, {}}, std::move(done));
}

// What a change is made against: group 0's decision; before any, the membership spread by messages (an
// older version's changes, or one this node learnt before it voted in group 0); before any change, the
// configuration group 0 was bootstrapped with.
result<membership> replicator::current_membership() const {
  if (committed_) return *committed_;
  if (desired_.epoch > 0) return desired_;
  membership m;
  const raft_configuration& c = groups_[0]->r.configuration;  // lane 0's first group is group 0
  for (unsigned i = 0; i < c.n; ++i) m.members.emplace(c.servers[i].id, c.servers[i].address);
  if (m.members.empty()) {
    return make_error(membership_errc::unknown, "node " + std::to_string(opts_.self) +
                                                    " has not joined a cluster yet: send the change to a "
                                                    "node of the cluster");
  }
  return m;
}

// A change goes to group 0 as an entry holding the membership it is made against. That base is read
// after a ReadIndex of group 0, so it holds every change committed before the request arrived: a client
// that sends one change after another (each after the previous answer) never sees a stale refusal.
void replicator::propose_change(membership_change c, membership_done done) {
  if (!decides()) {
    soon([done = std::move(done), lane = opts_.lane] {
      done(make_error(membership_errc::invalid,
                      fmt::format("lane {} follows lane 0's membership: send the change to lane 0", lane)));
    });
    return;
  }
  if (auto known = current_membership(); !known) {
    soon([done = std::move(done), e = known.err()] { done(e); });  // never inside the call
    return;
  }
  read_index(0, [this, c = std::move(c), done = std::move(done)](bool ok) mutable {
    // On the next turn: a leader's read ends inside libraft (its barrier callback), no place to propose.
    soon([this, ok, c = std::move(c), done = std::move(done)]() mutable {
      propose_after_read(ok, std::move(c), std::move(done));
    });
  });
}

void replicator::propose_after_read(bool read, membership_change c, membership_done done) {
  if (!read) {
    return done(
        make_error(membership_errc::no_quorum,
                   "group 0 cannot reach a quorum (it decides membership changes); nothing was changed"));
  }
  auto base = current_membership();
  if (!base) return done(base.err());
  // Checked here for a quick answer; apply_change decides again when the entry is applied.
  auto next = c.what == membership_change::op::add ? with_member(*base, c.id, c.address)
                                                   : without_member(*base, c.id);
  if (!next) return done(next.err());
  if (c.what == membership_change::op::add) c.address = next->members.at(c.id);  // normalised
  c.base = std::move(*base);
  const std::uint64_t ticket = submit(0, encode_membership_change(c), entry_kind::membership);
  changes_.emplace(ticket, std::move(done));
}

void replicator::apply_membership(std::uint32_t gi, std::uint64_t index, std::span<const std::byte> command,
                                  std::uint64_t ticket) {
  result<membership> outcome = membership{};
  if (gi != 0) {
    // Every node skips it alike: only group 0 decides the membership.
    outcome = make_error(membership_errc::invalid, "a membership change outside group 0");
  } else if (auto c = decode_membership_change(command); !c) {
    outcome = c.err();
  } else {
    outcome = apply_change(committed_, *c);
    if (outcome) note_departures(committed_ ? *committed_ : c->base, *outcome, departed_);
  }
  if (outcome) {
    committed_ = *outcome;
    log::info("weir cluster: node {}: group 0 entry {}: membership epoch {} committed", opts_.self, index,
              committed_->epoch);
    // Adopted on the next turn: adopting reconciles configurations, never from inside libraft's apply.
    soon([this] { follow_committed(); });
  } else {
    log::info("weir cluster: node {}: group 0 entry {}: membership change refused: {}", opts_.self, index,
              outcome.err().reason);
  }
  if (ticket != 0) finish_change(ticket, std::move(outcome));
}

// Answered on a later turn: `apply` runs inside libraft.
void replicator::finish_change(std::uint64_t ticket, result<membership> outcome) {
  auto it = changes_.find(ticket);
  if (it == changes_.end()) return;
  soon([done = std::move(it->second), outcome = std::move(outcome)]() mutable { done(std::move(outcome)); });
  changes_.erase(it);
}

// desired_ follows group 0's decisions forward (a restarted node replays older ones after its members
// file gave it the latest: those are not adopted). A decision wins over a membership of the same epoch
// that came by message. Called after every membership apply and restore, and every second (a members
// file that could not be written is tried again).
void replicator::follow_committed() {
  if (!committed_ || committed_->epoch < desired_.epoch || *committed_ == desired_) return;
  if (auto st = adopt(*committed_); !st) {
    log::error("weir cluster: node {}: membership epoch {}: {}", opts_.self, committed_->epoch,
               st.err().reason);
    return;
  }
  share_membership();
}

bool replicator::in_another_group(std::uint64_t id) const {
  for (const auto& g : groups_)
    if (g->id != 0 && find_server(g->r.configuration, id) != nullptr) return true;
  for (const auto& [lane, nodes] : configured_elsewhere_)
    if (nodes.contains(id)) return true;
  return false;
}

bool replicator::votes_in_group0() const {
  const group* g0 = find(0);
  const raft_server* s = g0 != nullptr ? find_server(g0->r.configuration, opts_.self) : nullptr;
  return s != nullptr && s->role == RAFT_VOTER;
}

// ---- Lanes ----

void replicator::set_on_view(std::function<void(const lane_view&)> fn) {
  on_view_ = std::move(fn);
  published_.reset();
  publish_view();
}

void replicator::publish_view() {
  if (!decides() || !on_view_) return;
  lane_view v{desired_, membership_current_, left()};
  if (published_ && *published_ == v) return;
  published_ = v;
  on_view_(v);
}

void replicator::follow(const lane_view& v) {
  if (decides()) return;
  followed_left_ = v.left;
  membership_current_ = v.current;
  if (v.desired != desired_) {
    if (auto st = adopt(v.desired); !st) {
      log::error("weir cluster: node {} lane {}: membership epoch {}: {}", opts_.self, opts_.lane,
                 v.desired.epoch, st.err().reason);
    }
    return;
  }
  reconcile();
}

void replicator::set_on_configured(std::function<void(const std::set<std::uint64_t>&)> fn) {
  on_configured_ = std::move(fn);
  reported_.reset();
  report_configured();
}

void replicator::report_configured() {
  if (decides() || !on_configured_) return;
  std::set<std::uint64_t> nodes;
  for (const auto& g : groups_)
    for (unsigned i = 0; i < g->r.configuration.n; ++i) nodes.insert(g->r.configuration.servers[i].id);
  if (reported_ && *reported_ == nodes) return;
  reported_ = nodes;
  on_configured_(nodes);
}

void replicator::configured_elsewhere(std::uint32_t lane, std::set<std::uint64_t> nodes) {
  configured_elsewhere_[lane] = std::move(nodes);
}

void replicator::connect_lanes(const std::vector<lane_port>& lanes) {
  if (lanes.size() < 2) return;
  const lane_port home = lanes[0];
  const std::vector<lane_port> others(lanes.begin() + 1, lanes.end());
  home.r->set_on_view([others](const lane_view& v) {
    for (const lane_port& l : others) l.post([r = l.r, v] { r->follow(v); });
  });
  for (const lane_port& l : others) {
    l.r->set_on_configured([home, lane = l.r->lane()](const std::set<std::uint64_t>& nodes) {
      home.post([r = home.r, lane, nodes] { r->configured_elsewhere(lane, nodes); });
    });
  }
}

// A membership from a peer's message. A voter of group 0 takes memberships from group 0's log only: it
// learns every decision through raft (replay after a restart, or a snapshot), and what it acts on (its
// groups' configurations, its links) is then always a decision, never a message's view. Other nodes
// (started with `join` and not added to group 0 yet) adopt a newer one: it tells them their peers.
void replicator::on_membership_message(std::uint64_t from, membership theirs) {
  if (!decides()) return;  // a following lane takes lane 0's (follow)
  if (supersedes(theirs, desired_)) {
    const bool voter = votes_in_group0();
    // A node that was a member (a voter of group 0, or one whose membership names it: a standby being
    // added when it was removed) and is not in the newer one was removed. One that removed it may never
    // reach it through group 0 (libraft stops sending to a server once its removal is appended, and a
    // node down through its removal is in no configuration when it starts again), and a member's
    // farewell is how it learns it left: it then takes no request (left()), and changes nothing else. A
    // node waiting to be added was never a member, and adopts what it is sent (below).
    if ((voter || desired_.members.contains(opts_.self)) && !theirs.members.contains(opts_.self)) {
      if (theirs.epoch > told_left_epoch_) {
        told_left_epoch_ = theirs.epoch;
        log::warn(
            "weir cluster: node {}: node {} says the cluster removed this node (membership epoch {}): "
            "it takes no request any more; stop it",
            opts_.self, from, theirs.epoch);
      }
      return;
    }
    if (voter) return;  // a voter acts on decisions only
    if (auto ok = check_membership(theirs); !ok) {
      log::warn("weir cluster: node {} sent a membership this node cannot use: {}", from, ok.err().reason);
    } else if (auto st = adopt(theirs); !st) {
      log::error("weir cluster: membership epoch {} from node {}: {}", theirs.epoch, from, st.err().reason);
    }
  } else if (desired_.epoch > 0 && supersedes(desired_, theirs)) {
    send(from, to_message(desired_));  // it missed a change: catch it up now
  }
}

// A node that is no peer tried to link to this one (links refused it). If group 0's decisions removed it,
// it may not know: it was down through its removal, or missed the farewell. It is linked again at the
// address it had, and sync_peers then sends it the farewell (the decision) and unlinks it, as for a node
// removed while up. A node never removed (one waiting to be added: its addition is not committed yet) is
// told nothing. Once per farewell_again_ms per node: a removed node that keeps running keeps knocking.
void replicator::on_stranger(std::uint64_t id) {
  if (!decides()) return;  // lane 0 knows the departures
  auto d = departed_.find(id);
  if (d == departed_.end() || known_.contains(id) || desired_.members.contains(id)) return;
  const std::int64_t now = ex_.now_ms();
  if (auto t = strangers_told_.find(id); t != strangers_told_.end() && now - t->second < farewell_again_ms)
    return;
  std::erase_if(strangers_told_, [&](const auto& kv) { return !departed_.contains(kv.first); });
  strangers_told_[id] = now;
  log::info(
      "weir cluster: node {}: node {}, removed at membership epoch {}, tried to link: telling it it left",
      opts_.self, id, d->second.epoch);
  link_peer(id, d->second.address);
  if (known_.contains(id)) send(id, to_message(desired_));
}

// Keeps `m` (members file first: a change acknowledged is not lost by a crash), links to its new nodes
// and starts the changes this node can make.
weir::status replicator::adopt(const membership& m) {
  if (!opts_.members_path.empty() && decides()) {
    if (auto st = store_membership(*env_, opts_.members_path, m); !st) return st;
  }
  // A node this decision removes may come back under its id on a new data directory: the incarnation
  // its old directory had is forgotten now, before it can knock (docs/replication.md, "A node that lost
  // its data directory"). The links to it stay until sync_peers unlinks it. Removed: a member of the
  // membership this node acted on that `m` lacks, or a departure newer than it (the bootstrap
  // membership, epoch 0, lists no members; group 0's snapshot carries the departures).
  for (const auto& [id, addr] : desired_.members)
    if (!m.members.contains(id)) links_.forget_incarnation(id);
  for (const auto& [id, d] : departed_)
    if (d.epoch > desired_.epoch && !m.members.contains(id)) links_.forget_incarnation(id);
  desired_ = m;
  std::string list;
  for (const auto& [id, addr] : desired_.members) {
    list += fmt::format("{}{}={}", list.empty() ? "" : ",", id, addr);
    link_peer(id, addr);
  }
  log::info("weir cluster: node {} lane {}: membership epoch {}: {}", opts_.self, opts_.lane, desired_.epoch,
            list);
  if (!desired_.members.contains(opts_.self) && decides()) {
    log::warn(
        "weir cluster: node {} is not a member of the cluster any more (membership epoch {}): it takes "
        "no request any more (503); stop it",
        opts_.self, desired_.epoch);
  }
  reconcile();
  publish_view();
  return {};
}

void replicator::share_membership() {
  next_share_ms_ = ex_.now_ms() + share_every_ms;
  if (desired_.epoch == 0 || !decides()) return;
  const membership_update u = to_message(desired_);
  for (const auto& [id, addr] : known_) send(id, u);
}

void replicator::link_peer(std::uint64_t id, const std::string& address) {
  if (id == opts_.self) return;
  if (auto it = known_.find(id); it != known_.end() && it->second == address) return;
  if (auto st = links_.add_peer(id, address); !st) {
    log::warn("weir cluster: node {}: cannot link to node {} at '{}': {}", opts_.self, id, address,
              st.err().reason);
    return;
  }
  io_->set_address(raft::node_id(id), address);
  known_[id] = address;
}

void replicator::sync_peers() {
  std::map<std::uint64_t, std::string> in_configurations;
  for (const auto& g : groups_) {
    for (unsigned i = 0; i < g->r.configuration.n; ++i)
      in_configurations.emplace(g->r.configuration.servers[i].id, g->r.configuration.servers[i].address);
  }
  // A node another leader added while this node missed the membership: its raft frames are welcome.
  for (const auto& [id, addr] : in_configurations)
    if (!known_.contains(id)) link_peer(id, addr);
  if (desired_.epoch == 0) return;
  std::vector<std::uint64_t> gone;
  for (const auto& [id, addr] : known_)
    if (!desired_.members.contains(id) && !in_configurations.contains(id)) gone.push_back(id);
  // A farewell counts for a node that is still gone: one added back meanwhile gets a new one later.
  std::erase_if(farewells_,
                [&](std::uint64_t id) { return std::find(gone.begin(), gone.end(), id) == gone.end(); });
  for (std::uint64_t id : gone) {
    // First a farewell: the decision that removed it, which group 0 may not have carried to it (see
    // on_membership_message); unlinked at the next call, once the message went out. Lane 0's links
    // carry it: a following lane unlinks at once.
    if (decides() && farewells_.insert(id).second) {
      send(id, to_message(desired_));
      continue;
    }
    farewells_.erase(id);
    log::info("weir cluster: node {}: node {} left every group; unlinked", opts_.self, id);
    links_.remove_peer(id);
    io_->remove_address(raft::node_id(id));
    known_.erase(id);
  }
}

bool replicator::settled(const group& g) const {
  if (desired_.epoch == 0) return true;
  const raft_configuration& c = g.r.configuration;
  if (c.n != desired_.members.size()) return false;
  for (const auto& [id, addr] : desired_.members) {
    const raft_server* s = find_server(c, id);
    if (s == nullptr || s->role != RAFT_VOTER || addr != s->address) return false;
  }
  return true;
}

// Before this node changes any group's configuration, its group 0 must have applied every decision made
// before this run checked (one ReadIndex of group 0 per run): a node restarted with an older members file
// (it was down while a change was made) would otherwise lead a group toward the membership it had,
// undoing the change there until its group 0 caught up. It does not take a newer membership from a
// message (on_membership_message), so raft is where it learns it.
void replicator::reconcile() {
  if (desired_.epoch == 0) return;
  if (!membership_current_) {
    if (membership_checking_ || !decides()) return;  // a following lane waits for lane 0's (follow)
    membership_checking_ = true;
    read_index(0, [this](bool ok) {
      membership_checking_ = false;
      if (!ok) return;  // asked again at the next reconcile (every second)
      membership_current_ = true;
      soon([this] {  // not from inside libraft (a leader's read ends in its barrier callback)
        follow_committed();
        reconcile();
        publish_view();
      });
    });
    return;
  }
  int in_flight = 0;
  for (const auto& g : groups_) in_flight += g->changing ? 1 : 0;
  for (auto& g : groups_) {
    if (in_flight >= max_changes_in_flight) return;
    if (start_change(*g)) ++in_flight;
  }
}

// The next single step that brings a group this node leads toward the desired membership. Additions
// before removals (Raft thesis 4.2: one server at a time; adding first keeps as many voters as
// possible): add as a spare, make it a standby (libraft then replicates the log to it from index 1, and
// it does not count toward the quorum), make it a voter once it has (nearly) caught up (libraft's last
// catch-up round takes it the rest of the way); then remove the nodes that left.
bool replicator::start_change(group& g) {
  const std::int64_t now = ex_.now_ms();
  if (g.changing || g.transferring || now < g.next_change_ms || raft_state(&g.r) != RAFT_LEADER) return false;
  // A change libraft still carries (appended by an earlier leader, or this one's): wait for its commit.
  if (g.r.configuration_uncommitted_index != 0 || g.r.leader_state.promotee_id != 0) return false;
  const raft_configuration& c = g.r.configuration;
  g.change = {};
  g.change.data = &g;
  auto started = [&](const char* what, std::uint64_t id, int rv) {
    if (rv == 0) {
      g.changing = true;
      log::debug("weir cluster: group {}: {} node {}", g.id, what, id);
      return true;
    }
    log::warn("weir cluster: group {}: {} node {}: {}", g.id, what, id, raft_strerror(rv));
    g.next_change_ms = now + change_retry_ms;
    return false;
  };
  for (const auto& [id, addr] : desired_.members) {
    const raft_server* s = find_server(c, id);
    if (s == nullptr)
      return started("adding", id, raft_add(&g.r, &g.change, id, addr.c_str(), &group_glue::changed));
    if (addr != s->address && id != opts_.self) {
      // The same id at another address (a node replaced under its old id): out, then in again.
      return started("removing (moved)", id, raft_remove(&g.r, &g.change, id, &group_glue::changed));
    }
  }
  for (const auto& [id, addr] : desired_.members) {
    const unsigned i = static_cast<unsigned>(find_server(c, id) - c.servers);
    const int role = c.servers[i].role;
    if (role == RAFT_SPARE) {
      return started("making a standby", id,
                     raft_assign(&g.r, &g.change, id, RAFT_STANDBY, &group_glue::changed));
    }
    if (role == RAFT_STANDBY && g.r.leader_state.progress[i].match_index >= g.r.commit_index) {
      return started("making a voter", id,
                     raft_assign(&g.r, &g.change, id, RAFT_VOTER, &group_glue::changed));
    }
  }
  for (unsigned i = 0; i < c.n; ++i) {
    const std::uint64_t id = c.servers[i].id;
    if (desired_.members.contains(id)) continue;
    // Group 0 lets a leaving node go last. Its heartbeats are how that node learns the decision that
    // removed it (libraft stops sending to a server from the moment its removal is appended, so the
    // commit of the decision may never reach it); until it has, the groups it leads keep it as their
    // leader, and nothing else takes them from it while it runs.
    if (g.id == 0 && in_another_group(id)) continue;
    if (id != opts_.self)
      return started("removing", id, raft_remove(&g.r, &g.change, id, &group_glue::changed));
    // This leader leaves: it hands the group to a connected voter that stays, which then removes it.
    const auto up = links_up();
    for (unsigned j = 0; j < c.n; ++j) {
      const std::uint64_t to = c.servers[j].id;
      if (to == opts_.self || c.servers[j].role != RAFT_VOTER || !desired_.members.contains(to)) continue;
      if (auto u = up.find(to); u == up.end() || !u->second) continue;
      g.transfer = {};
      g.transfer.data = &g;
      g.last_transfer_ms = now;
      if (raft_transfer(&g.r, &g.transfer, to, &group_glue::transferred) == 0) g.transferring = true;
      break;
    }
    return false;
  }
  return false;
}

}  // namespace weir::cluster
