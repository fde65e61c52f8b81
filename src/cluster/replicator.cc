#include "cluster/replicator.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <random>

#include "base/log.h"
#include "cluster/links.h"
#include "cluster/replicator_group.h"
#include "raft/libraft.h"
#include "raft/node_io.h"
#include "raft/node_log.h"

namespace weir::cluster {

using detail::message_channel;
using detail::to_message;
using std::chrono::milliseconds;

namespace {
constexpr milliseconds retry_delay{20};
constexpr milliseconds read_poll{2};
constexpr milliseconds read_resend{300};
}  // namespace

raft_bytes::raft_bytes(std::size_t n) : base_(static_cast<std::byte*>(raft_malloc(n))), len_(base_ ? n : 0) {}

raft_bytes& raft_bytes::operator=(raft_bytes&& o) noexcept {
  if (this != &o) {
    raft_free(base_);
    base_ = std::exchange(o.base_, nullptr);
    len_ = std::exchange(o.len_, 0);
  }
  return *this;
}

raft_bytes::~raft_bytes() {
  raft_free(base_);
}

replicator::replicator(raft::executor& ex, links& l, options o, callbacks cb)
    : ex_(ex), links_(l), opts_(std::move(o)), cb_(std::move(cb)) {}

result<std::unique_ptr<replicator>> replicator::open(raft::executor& ex,
                                                     std::unique_ptr<raft::log_flusher> flusher,
                                                     storage::env& env, links& l, options o, callbacks cb) {
  if (o.lanes == 0 || o.lane >= o.lanes || o.lanes > o.groups) {
    return error{EINVAL, fmt::format("lane {} of {} with {} groups: every lane needs a group", o.lane,
                                     o.lanes, o.groups)};
  }
  std::unique_ptr<replicator> self(new replicator(ex, l, std::move(o), std::move(cb)));
  replicator& s = *self;
  // Tickets and read ids of this run start at a random point of a 63-bit space (never 0: "nobody waits"),
  // so that they differ from those of the node's earlier runs (options::id_seed).
  std::uint64_t start = s.opts_.id_seed;
  if (start == 0) start = std::uint64_t(std::random_device{}()) << 32 | std::random_device{}();
  s.next_ticket_ = (start >> 1) | 1;
  s.next_read_ = s.next_ticket_;
  s.rng_.seed(start);
  s.flusher_ = std::move(flusher);
  s.env_ = &env;
  // The desired membership of an earlier run; its file also marks a node that joined (or waits to).
  bool has_members_file = false;
  if (!s.opts_.members_path.empty()) {
    auto loaded = load_membership(env, s.opts_.members_path);
    if (!loaded) return loaded.err();
    if (*loaded) {
      s.desired_ = std::move(**loaded);
      has_members_file = true;
    } else if (s.opts_.join && s.decides()) {
      // Before anything else: a restart without --join must not bootstrap a configuration of its own.
      if (auto st = store_membership(env, s.opts_.members_path, membership{}); !st) return st.err();
      has_members_file = true;
    }
  }
  const bool bootstrap = !s.opts_.join && !has_members_file;
  raft::node_log_options lopts;
  lopts.prepare_segments = s.opts_.prepare_log_segments;
  lopts.segment_bytes = s.opts_.log_segment_bytes;
  lopts.keep = s.opts_.keep_log_segment;
  auto log = raft::node_log::open(env, *s.flusher_, s.opts_.log_path, lopts);
  if (!log) return log.err();
  s.log_ = std::move(*log);
  s.log_->set_on_placed([p = &s](raft::group_id g, raft::log_index index, const raft::entry_place& at) {
    if (group* found = p->find(g.value())) found->places.placed(index.value(), at, found->r.last_applied);
  });
  std::map<raft::node_id, std::string> addresses;
  for (const auto& [id, addr] : s.opts_.addresses) addresses.emplace(raft::node_id(id), addr);
  s.io_ = std::make_unique<raft::node_io>(
      ex, l.raft_transport(), *s.log_,
      raft::node_io::options{raft::node_id(s.opts_.self), addresses, s.opts_.self});
  if (s.cb_.log_failed) s.io_->set_on_log_failure(s.cb_.log_failed);
  s.io_->set_commit_index_source([p = &s](raft::group_id g) -> std::uint64_t {
    const group* found = p->find(g.value());
    return found != nullptr ? found->r.commit_index : 0;
  });
  s.io_->set_on_append([p = &s](raft::group_id g, std::uint64_t first, const raft_entry* entries,
                                unsigned n) { p->note_stored(g.value(), first, entries, n); });
  s.io_->set_after_append_result([p = &s](raft::group_id g) {
    if (group* found = p->find(g.value())) p->notify_commit(*found);
  });
  s.leadership_ = std::make_unique<leadership_watch>(s.opts_.self, s.opts_.groups);
  s.io_->set_after_event([p = &s](raft::group_id g, const raft::node_io::group_event& e) {
    p->after_event(g.value(), e.from.value(), e.type);
  });
  l.set_receiver([p = &s](std::uint64_t from, std::uint8_t channel, std::span<const std::byte> bytes) {
    if (channel == message_channel) p->on_message(from, bytes);
  });
  l.set_stranger_handler([p = &s](std::uint64_t id) { p->on_stranger(id); });
  const std::string& my_address = s.opts_.addresses.at(s.opts_.self);
  for (std::uint32_t i = s.opts_.lane; i < s.opts_.groups; i += s.opts_.lanes) {
    auto g = std::make_unique<group>();
    g->owner = &s;
    g->id = i;
    g->fsm.version = 1;
    g->fsm.data = g.get();
    g->fsm.apply = &group_glue::apply;
    const bool snapshots = s.opts_.snapshot_threshold != 0 && s.cb_.snapshot && s.cb_.restore;
    if (snapshots) {
      g->fsm.snapshot = &group_glue::snapshot;
      g->fsm.restore = &group_glue::restore;
    }
    if (int rv = raft_init(&g->r, s.io_->io_of(raft::group_id(i)), &g->fsm, s.opts_.self, my_address.c_str());
        rv != 0) {
      return error{rv, "raft_init of group " + std::to_string(i) + ": " + raft_strerror(rv)};
    }
    // The entries replayed after the restart point where the node log holds them.
    s.io_->for_each_recovered_place(
        raft::group_id(i),
        [&g](raft::log_index index, const raft::entry_place& at) { g->places.placed(index.value(), at, 0); });
    raft_set_election_timeout(&g->r, s.opts_.election_timeout_ms);
    raft_set_heartbeat_timeout(&g->r, s.opts_.heartbeat_ms);
    // Without snapshots libraft and the node log keep every entry.
    raft_set_snapshot_threshold(&g->r, snapshots ? s.opts_.snapshot_threshold : UINT_MAX);
    raft_set_snapshot_trailing(&g->r, s.opts_.snapshot_trailing);
    int rv = 0;
    if (bootstrap) {
      raft_configuration conf;
      raft_configuration_init(&conf);
      for (const auto& [id, addr] : s.opts_.addresses)
        raft_configuration_add(&conf, id, addr.c_str(), RAFT_VOTER);
      rv = raft_bootstrap(&g->r, &conf);
      raft_configuration_close(&conf);
    }
    if (rv != 0 && rv != RAFT_CANTBOOTSTRAP) {
      s.groups_.push_back(std::move(g));  // closed by the destructor
      return error{rv, "raft_bootstrap of group " + std::to_string(i) + ": " + raft_strerror(rv)};
    }
    rv = raft_start(&g->r);
    s.groups_.push_back(std::move(g));
    if (rv != 0) {
      return error{rv, "raft_start of group " + std::to_string(i) + ": " + raft_errmsg(&s.groups_.back()->r)};
    }
  }
  // Nodes added at run time: linked again from the groups' configurations and the desired membership
  // (its addresses last: a node that moved is found at its new address).
  for (const auto& [id, addr] : s.opts_.addresses)
    if (id != s.opts_.self) s.known_.emplace(id, addr);
  for (const auto& g : s.groups_) {
    for (unsigned i = 0; i < g->r.configuration.n; ++i) {
      const raft_server& srv = g->r.configuration.servers[i];
      if (!s.known_.contains(srv.id)) s.link_peer(srv.id, srv.address);
    }
  }
  for (const auto& [id, addr] : s.desired_.members) s.link_peer(id, addr);
  if (!bootstrap && s.decides() && s.groups_[0]->r.configuration.n == 0) {
    log::info(
        "weir cluster: node {} has joined no cluster yet: waiting to be added (POST "
        "/cluster/members?id={}&address={} on a node of the cluster)",
        s.opts_.self, s.opts_.self, my_address);
  }
  s.arm_sweep();
  return self;
}

std::uint64_t replicator::snapshots_sent() const {
  return io_->counters().snapshots_sent;
}

std::optional<std::size_t> replicator::snapshot_state_offset(std::span<const std::byte> data) {
  auto parts = group_glue::split(data);
  if (!parts) return std::nullopt;
  return parts->state_offset;
}

replicator::log_figures replicator::node_log_figures() const {
  return log_figures{log_->disk_bytes(),       log_->live_bytes(),     log_->segments(),
                     log_->bytes_written(),    log_->batches_synced(), log_->bytes_reclaimed(),
                     log_->segments_deleted(), log_->entries_carried()};
}

replicator::~replicator() {
  closing_ = true;
  *alive_ = false;
  if (sweep_timer_ != 0) ex_.cancel_timer(sweep_timer_);
  if (read_poll_timer_ != 0) ex_.cancel_timer(read_poll_timer_);
  links_.set_receiver(nullptr);
  links_.set_stranger_handler(nullptr);
  for (auto& g : groups_) raft_close(&g->r, &group_glue::closed);  // node_io calls back synchronously
  groups_.clear();
  io_.reset();
  flusher_.reset();  // finishes a flush in flight before the file goes away
  log_.reset();
}

replicator::group* replicator::find(std::uint32_t gi) const {
  if (gi % opts_.lanes != opts_.lane) return nullptr;
  const std::uint32_t i = gi / opts_.lanes;
  return i < groups_.size() ? groups_[i].get() : nullptr;
}

bool replicator::leads(std::uint32_t gi) const {
  group* g = find(gi);
  return g != nullptr && raft_state(&g->r) == RAFT_LEADER;
}

std::optional<std::uint64_t> replicator::leader_term(std::uint32_t gi) const {
  group* g = find(gi);
  if (g == nullptr || raft_state(&g->r) != RAFT_LEADER) return std::nullopt;
  return g->r.current_term;
}

std::uint64_t replicator::applied_index(std::uint32_t gi) const {
  group* g = find(gi);
  return g == nullptr ? 0 : g->r.last_applied;
}

std::uint64_t replicator::leader_of(std::uint32_t gi) const {
  group* g = find(gi);
  if (g == nullptr) return 0;
  raft_id id = 0;
  const char* address = nullptr;
  raft_leader(&g->r, &id, &address);
  return id;
}

std::uint64_t replicator::submit(std::uint32_t gi, std::span<const std::byte> command, entry_kind kind,
                                 bool here_only) {
  const std::uint64_t ticket = next_ticket_++;
  pending_submit& s = submits_[ticket];
  s.group = gi;
  group* g = find(gi);
  if (g != nullptr) ++g->submits;
  // The one copy of the command on its way into libraft's log: straight into the buffer raft_apply
  // takes, after its header (docs/replication.md, "The bytes of an append").
  const std::vector<std::byte> header = encode_entry(entry_header{opts_.self, ticket, kind}, {});
  s.entry = raft_bytes(header.size() + command.size());
  if (!s.entry.empty()) {
    std::memcpy(s.entry.data(), header.data(), header.size());
    if (!command.empty()) std::memcpy(s.entry.data() + header.size(), command.data(), command.size());
  }
  // Another lane's group: no leader here, and none to forward to (fails on the next turn).
  s.here_only = here_only || g == nullptr;
  s.started_ms = ex_.now_ms();
  s.deadline_ms = s.started_ms + opts_.submit_timeout.count();
  try_submit(ticket);
  return ticket;
}

void replicator::after(milliseconds delay, std::function<void()> fn) {
  ex_.add_timer(delay, [alive = std::weak_ptr<bool>(alive_), fn = std::move(fn)] {
    if (auto a = alive.lock(); a && *a) fn();
  });
}

void replicator::soon(std::function<void()> fn) {
  ex_.post([alive = std::weak_ptr<bool>(alive_), fn = std::move(fn)] {
    if (auto a = alive.lock(); a && *a) fn();
  });
}

void replicator::try_submit(std::uint64_t ticket) {
  auto it = submits_.find(ticket);
  if (it == submits_.end()) return;
  pending_submit& s = it->second;
  s.retry_armed = false;
  // Already in this node's libraft (a stale reject of an earlier forward): never proposed twice.
  if (s.proposed && s.proposed_to == opts_.self && s.entry.empty()) return;
  if (s.entry.empty()) {
    // raft_malloc failed in submit: nothing was proposed.
    s.retry_armed = true;
    ex_.post([this, alive = std::weak_ptr<bool>(alive_), ticket] {
      if (auto a = alive.lock(); a && *a) resolve_failed(ticket, submit_error::no_leader);
    });
    return;
  }
  const std::uint64_t leader = leader_of(s.group);
  if (leader == opts_.self) {
    s.proposed = true;
    s.proposed_to = leader;
    propose(s.group, s.entry, opts_.self, ticket);  // may resolve or re-arm the ticket
    return;
  }
  if (s.here_only) {
    // Not the leader (any more): nothing was proposed. Resolved on the next turn, never inside submit().
    s.retry_armed = true;
    ex_.post([this, alive = std::weak_ptr<bool>(alive_), ticket] {
      if (auto a = alive.lock(); a && *a) resolve_failed(ticket, submit_error::no_leader);
    });
    return;
  }
  if (leader != 0) {
    s.proposed = true;
    s.proposed_to = leader;
    send(leader, forward{s.group, s.entry.bytes()});
    return;
  }
  s.retry_armed = true;
  after(retry_delay, [this, ticket] { try_submit(ticket); });
}

void replicator::propose(std::uint32_t gi, raft_bytes& entry, std::uint64_t origin, std::uint64_t ticket) {
  group& g = *find(gi);  // try_submit and on_message checked it is this lane's
  auto retry = [&] {
    if (origin != opts_.self) {
      send(origin, forward_reject{ticket, reject_reason::not_leader, leader_of(gi)});
      return;
    }
    auto it = submits_.find(ticket);
    if (it == submits_.end() || it->second.retry_armed) return;
    it->second.proposed = false;
    it->second.retry_armed = true;
    after(retry_delay, [this, ticket] { try_submit(ticket); });
  };
  if (raft_state(&g.r) != RAFT_LEADER) {
    retry();
    return;
  }
  raft_bytes taken = std::move(entry);
  raft_buffer buf;
  buf.len = taken.size();
  buf.base = taken.data();
  auto* p = new group_glue::proposal;
  p->owner = this;
  p->origin = origin;
  p->ticket = ticket;
  p->req.data = p;
  if (int rv = raft_apply(&g.r, &p->req, &buf, 1, &group_glue::applied); rv != 0) {
    delete p;
    entry = std::move(taken);  // still ours: a retry proposes it again
    retry();
    return;
  }
  (void)taken.release();  // libraft's log owns it now
}

void replicator::leadership_lost(std::uint64_t ticket) {
  auto it = submits_.find(ticket);
  if (it == submits_.end()) return;
  // The entry was proposed and its leader lost leadership before it committed (a crash, a partition, or
  // a planned hand-over: balance-leaders). It may still commit under the next leader, which carries
  // it on; its header names this node and the ticket, so applying it answers the ticket with its real
  // outcome. Wait for that until the deadline (then: outcome unknown). Never propose it again: it could
  // apply twice. A here_only entry fails at once (its proposer stops serving the group).
  if (it->second.here_only) resolve_failed(ticket, submit_error::unknown);
}

void replicator::resolve_failed(std::uint64_t ticket, submit_error e) {
  if (!forget_submit(ticket)) return;
  if (changes_.contains(ticket)) {
    finish_change(ticket, e == submit_error::no_leader
                              ? make_error(membership_errc::no_quorum,
                                           "group 0 had no leader within the deadline; nothing was changed")
                              : make_error(membership_errc::outcome_unknown,
                                           "group 0 lost its leader before the change committed: it may or "
                                           "may not be made; check GET /cluster/members"));
    return;
  }
  if (cb_.failed) cb_.failed(ticket, e);
}

void replicator::call_leader(std::uint32_t gi, std::vector<std::byte> request,
                             std::function<void(result<std::vector<std::byte>>)> done) {
  const std::uint64_t id = next_read_++;  // the read ids' space: unique across this node's runs too
  pending_call& c = calls_[id];
  c.group = gi;
  c.request = std::move(request);
  c.done = std::move(done);
  c.deadline_ms = ex_.now_ms() + opts_.submit_timeout.count();
  try_call(id);
}

void replicator::try_call(std::uint64_t id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  const std::uint32_t g = it->second.group;
  const std::uint64_t leader = leader_of(g);  // 0 for another lane's group: retried to the deadline
  if (leader == opts_.self && cb_.serve) {
    // A copy: serve() may answer at once, and the answer ends the call (and its stored request).
    const std::vector<std::byte> request = it->second.request;
    cb_.serve(g, request,
              [this, alive = std::weak_ptr<bool>(alive_), id](std::optional<std::vector<std::byte>> answer) {
                auto a = alive.lock();
                if (!a || !*a) return;
                if (!answer) return retry_call(id);
                finish_call(id, std::move(*answer));
              });
    return;
  }
  if (leader != 0 && leader != opts_.self) {
    send(leader, leader_call{id, g, it->second.request});
    return;
  }
  retry_call(id);
}

void replicator::retry_call(std::uint64_t id) {
  if (calls_.count(id) == 0) return;
  ex_.add_timer(retry_delay, [this, alive = std::weak_ptr<bool>(alive_), id] {
    if (auto a = alive.lock(); a && *a) try_call(id);
  });
}

void replicator::finish_call(std::uint64_t id, result<std::vector<std::byte>> answer) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;  // timed out meanwhile
  auto done = std::move(it->second.done);
  calls_.erase(it);
  done(std::move(answer));
}

void replicator::read_index(std::uint32_t gi, std::function<void(bool)> ready) {
  if (find(gi) == nullptr) {  // another lane's group: never served here
    soon([ready = std::move(ready)] { ready(false); });
    return;
  }
  const std::uint64_t id = next_read_++;
  pending_read& r = reads_[id];
  r.group = gi;
  r.ready = std::move(ready);
  r.deadline_ms = ex_.now_ms() + opts_.read_timeout.count();
  try_read(id);
}

void replicator::try_read(std::uint64_t id) {
  auto it = reads_.find(id);
  if (it == reads_.end() || it->second.have_index) return;
  const std::uint32_t g = it->second.group;
  const std::uint64_t leader = leader_of(g);
  if (leader == opts_.self) {
    leader_read(g, [this, id](bool ok, std::uint64_t index) {
      auto found = reads_.find(id);
      if (found == reads_.end()) return;
      if (!ok) {
        after(retry_delay, [this, id] { try_read(id); });
        return;
      }
      found->second.index = index;
      found->second.have_index = true;
      check_reads();
    });
    return;
  }
  if (leader != 0) {
    send(leader, read_request{g, id});
    // Reads are safe to ask for again: a request or its answer lost with a link (or a leader that died
    // with it) is asked again of the leader known then, until the read's deadline.
    after(read_resend, [this, id] { try_read(id); });
    return;
  }
  after(retry_delay, [this, id] { try_read(id); });
}

void replicator::leader_read(std::uint32_t gi, std::function<void(bool, std::uint64_t)> done) {
  group* found = find(gi);
  if (found == nullptr || raft_state(&found->r) != RAFT_LEADER) {
    done(false, 0);
    return;
  }
  group& g = *found;
  const std::uint64_t recorded = g.trusted_term == g.r.current_term ? g.r.commit_index : 0;
  g.next_reads.emplace_back(recorded, std::move(done));
  if (!g.barrier_running) start_barrier(g);
}

void replicator::start_barrier(group& g) {
  g.barrier_reads = std::move(g.next_reads);
  g.next_reads.clear();
  g.barrier_running = true;
  g.barrier = {};
  g.barrier.data = &g;
  if (int rv = raft_barrier(&g.r, &g.barrier, &group_glue::barrier_done); rv != 0) {
    g.barrier_running = false;
    auto reads = std::move(g.barrier_reads);
    g.barrier_reads.clear();
    for (auto& [recorded, fn] : reads) fn(false, 0);
  }
}

void replicator::notify_commit(group& g) {
  if (g.notify_posted || raft_state(&g.r) != RAFT_LEADER) return;
  g.notify_posted = true;
  soon([this, gp = &g] {
    group& grp = *gp;
    grp.notify_posted = false;
    if (closing_ || raft_state(&grp.r) != RAFT_LEADER) return;
    if (grp.told_term != grp.r.current_term) {
      grp.told.clear();
      grp.told_term = grp.r.current_term;
    }
    // libraft tells a follower of a new commit index only with its next AppendEntries (a heartbeat
    // later when no entry follows), and a follower takes it only up to what it has on disk. A follower
    // that proposed an entry, or waits for a read index, would wait that long. So once a follower's
    // match index shows it can take a higher commit index than it was told, mark its last send as old
    // and tick: libraft sends it an AppendEntries carrying the commit index, in this loop turn's packet.
    bool due = false;
    for (unsigned i = 0; i < grp.r.configuration.n; ++i) {
      const raft_id id = grp.r.configuration.servers[i].id;
      if (id == opts_.self) continue;
      const std::uint64_t can_take =
          std::min<std::uint64_t>(grp.r.commit_index, grp.r.leader_state.progress[i].match_index);
      std::uint64_t& told = grp.told[id];
      if (can_take <= told) continue;
      told = can_take;
      grp.r.leader_state.progress[i].last_send = 0;
      due = true;
    }
    if (due) io_->tick_now(raft::group_id(grp.id));
  });
}

void replicator::schedule_read_check() {
  if (read_check_posted_ || reads_.empty()) return;
  read_check_posted_ = true;
  soon([this] {
    read_check_posted_ = false;
    check_reads();
  });
}

void replicator::check_reads() {
  bool waiting = false;
  std::vector<std::function<void(bool)>> ready;
  for (auto it = reads_.begin(); it != reads_.end();) {
    pending_read& r = it->second;
    const group* g = find(r.group);
    if (r.have_index && g != nullptr && g->r.last_applied >= r.index) {
      ready.push_back(std::move(r.ready));
      it = reads_.erase(it);
      continue;
    }
    waiting = waiting || r.have_index;
    ++it;
  }
  // Barriers do not pass through the state machine: poll for what the apply hook cannot see.
  if (waiting && read_poll_timer_ == 0) {
    read_poll_timer_ = ex_.add_timer(read_poll, [this] {
      read_poll_timer_ = 0;
      check_reads();
    });
  }
  for (auto& fn : ready) fn(true);
}

void replicator::send(std::uint64_t to, const message& m) {
  std::vector<std::byte> bytes = encode(m);
  links_.send(to, message_channel, bytes);
}

void replicator::on_message(std::uint64_t from, std::span<const std::byte> bytes) {
  message_ms_[from] = ex_.now_ms();
  auto m = decode(bytes);
  if (!m) {
    log::warn("weir cluster: from node {}: {}", from, m.err().reason);
    return;
  }
  if (auto* f = std::get_if<forward>(&*m)) {
    if (find(f->group) == nullptr) return;
    auto entry = decode_entry(f->entry);
    if (!entry) return;
    // The forwarded entry's one copy on this node before libraft: from the message into its buffer.
    raft_bytes copy(f->entry.size());
    if (copy.empty()) return;  // out of memory: the proposer's deadline answers it
    std::memcpy(copy.data(), f->entry.data(), f->entry.size());
    propose(f->group, copy, entry->first.origin, entry->first.ticket);
  } else if (auto* rj = std::get_if<forward_reject>(&*m)) {
    auto it = submits_.find(rj->ticket);
    if (it == submits_.end()) return;
    if (rj->reason == reject_reason::lost) {
      leadership_lost(rj->ticket);
    } else if (!it->second.retry_armed) {
      it->second.proposed = false;
      it->second.retry_armed = true;
      after(retry_delay, [this, t = rj->ticket] { try_submit(t); });
    }
  } else if (auto* rq = std::get_if<read_request>(&*m)) {
    if (find(rq->group) == nullptr) return;
    leader_read(rq->group, [this, from, id = rq->id, g = rq->group](bool ok, std::uint64_t index) {
      send(from, read_reply{id, ok, index, ok ? 0 : leader_of(g)});
    });
  } else if (auto* mu = std::get_if<membership_update>(&*m)) {
    on_membership_message(from, membership{mu->epoch, std::move(mu->members)});
  } else if (auto* lc = std::get_if<leader_call>(&*m)) {
    const std::uint32_t g = lc->group;
    if (find(g) == nullptr || !cb_.serve) {
      send(from, leader_reply{lc->id, false, 0, {}});
      return;
    }
    cb_.serve(g, lc->request,
              [this, alive = std::weak_ptr<bool>(alive_), from, id = lc->id,
               g](std::optional<std::vector<std::byte>> answer) {
                auto a = alive.lock();
                if (!a || !*a) return;
                if (!answer) {
                  send(from, leader_reply{id, false, leader_of(g), {}});
                } else {
                  send(from, leader_reply{id, true, 0, *answer});
                }
              });
  } else if (auto* lr = std::get_if<leader_reply>(&*m)) {
    if (calls_.count(lr->id) == 0) return;
    if (!lr->served) return retry_call(lr->id);
    finish_call(lr->id, std::vector<std::byte>(lr->answer.begin(), lr->answer.end()));
  } else if (auto* l = std::get_if<leading>(&*m)) {
    on_leading(from, *l);
  } else if (auto* rr = std::get_if<read_reply>(&*m)) {
    auto it = reads_.find(rr->id);
    if (it == reads_.end() || it->second.have_index) return;
    if (!rr->ok) {
      after(retry_delay, [this, id = rr->id] { try_read(id); });
      return;
    }
    it->second.index = rr->index;
    it->second.have_index = true;
    check_reads();
  }
}

void replicator::arm_sweep() {
  sweep_timer_ = ex_.add_timer(milliseconds(50), [this] {
    sweep_timer_ = 0;
    sweep();
    if (ex_.now_ms() >= next_balance_ms_) {
      next_balance_ms_ = ex_.now_ms() + 1000;
      sync_peers();
      follow_committed();
      reconcile();
      if (ex_.now_ms() >= next_share_ms_) share_membership();
      balance();
      publish_view();
      report_configured();
    }
    arm_sweep();
  });
}

bool replicator::forget_submit(std::uint64_t ticket) {
  auto it = submits_.find(ticket);
  if (it == submits_.end()) return false;
  if (group* g = find(it->second.group)) --g->submits;
  submits_.erase(it);
  return true;
}

// An entry this node proposed (or forwarded) reached its own log at `index`: if the group later applies
// that index without it, the entry was overwritten by another leader's and is lost (sweep()). Only a
// group with entries of this node pending can store one, so others are not parsed (every stored entry
// comes here, and a follower stores all of them).
void replicator::note_stored(std::uint32_t gi, std::uint64_t first, const raft_entry* entries, unsigned n) {
  const group* g = find(gi);
  if (g == nullptr || g->submits == 0) return;
  for (unsigned k = 0; k < n; ++k) {
    if (entries[k].type != RAFT_COMMAND) continue;
    auto entry = decode_entry(
        std::span<const std::byte>(static_cast<const std::byte*>(entries[k].buf.base), entries[k].buf.len));
    if (!entry || entry->first.origin != opts_.self) continue;
    auto it = submits_.find(entry->first.ticket);
    if (it != submits_.end()) it->second.index = first + k;
  }
}

void replicator::sweep() {
  const std::int64_t now = ex_.now_ms();
  leadership_->flush(now);
  watch_links();
  open_terms();
  vouch_contacts();
  if (now >= next_leading_ms_) {
    next_leading_ms_ = now + opts_.heartbeat_ms;
    announce_leading();
  }
  std::vector<std::pair<std::uint64_t, submit_error>> late;
  for (auto& [ticket, s] : submits_) {
    if (s.deadline_ms > now) continue;
    // Still committing, and either still led by the node it went to or stored in this node's log at an
    // index the group has not applied yet (a new leader that has it commits it there; one that lacks it
    // overwrites it, and the group then applies that index without it): it waits in a backlog, a second
    // at a time, up to backlog_timeout, while the group is busy here: it applied an entry in the last
    // second, or, still under the same leader (which has a quorum: a leader steps down when it hears from
    // none for an election timeout, and a follower forgets a leader it stops hearing from), this node's
    // log holds entries it has not applied yet (under a burst of large writes on a disk still writing
    // other data back, the next apply can be seconds away). An idle group that has not applied it lost
    // it. Otherwise the deadline stands (a leader that changed may have lost it).
    std::int64_t applied_ago = -1;
    group* found = find(s.group);
    if (s.proposed && found != nullptr && now - s.started_ms < opts_.backlog_timeout.count()) {
      group& g = *found;
      applied_ago = now - g.last_apply_ms;
      const bool applied_lately = applied_ago < 1000;
      const bool unapplied_here = raft_last_index(&g.r) > g.r.last_applied;
      const bool same_leader = leader_of(s.group) == s.proposed_to;
      const bool ahead = s.index != 0 && g.r.last_applied < s.index;
      const bool lost = s.index != 0 && !ahead;  // its index applied without it
      // Without its leader, only a group that is applying: a minority's log holds an unapplied tail too.
      if (!lost && ((same_leader && (applied_lately || unapplied_here)) || (ahead && applied_lately))) {
        s.deadline_ms = now + 1000;
        continue;
      }
    }
    if (s.proposed) {
      log::warn(
          "weir cluster: group {}: a write proposed to node {} {} ms ago has no outcome (leader now {}, "
          "stored here at index {}, group applied {} ms ago, up to {}): answered 503, it may or may not "
          "have been applied",
          s.group, s.proposed_to, now - s.started_ms, leader_of(s.group), s.index, applied_ago,
          found != nullptr ? found->r.last_applied : 0);
    }
    late.emplace_back(ticket, s.proposed ? submit_error::unknown : submit_error::no_leader);
  }
  for (auto [ticket, e] : late) resolve_failed(ticket, e);
  std::vector<std::function<void(bool)>> expired;
  for (auto it = reads_.begin(); it != reads_.end();) {
    if (it->second.deadline_ms <= now) {
      expired.push_back(std::move(it->second.ready));
      it = reads_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& fn : expired) fn(false);
  std::vector<std::uint64_t> late_calls;
  for (const auto& [id, c] : calls_) {
    if (c.deadline_ms <= now) late_calls.push_back(id);
  }
  for (std::uint64_t id : late_calls) {
    finish_call(id, error{static_cast<int>(submit_error::no_leader), "no leader answered in time"});
  }
}

std::vector<replicator::group_status> replicator::status() const {
  std::vector<group_status> out;
  for (const auto& g : groups_) {
    group_status s;
    s.group = g->id;
    s.leader = leader_of(g->id);
    switch (raft_state(const_cast<::raft*>(&g->r))) {
      case RAFT_LEADER:
        s.role = "leader";
        break;
      case RAFT_CANDIDATE:
        s.role = "candidate";
        break;
      case RAFT_FOLLOWER:
        s.role = "follower";
        break;
      default:
        s.role = "unavailable";
    }
    s.term = g->r.current_term;
    s.commit_index = g->r.commit_index;
    s.applied_index = g->r.last_applied;
    s.last_index = raft_last_index(const_cast<::raft*>(&g->r));
    for (unsigned i = 0; i < g->r.configuration.n; ++i) {
      const raft_server& srv = g->r.configuration.servers[i];
      (srv.role == RAFT_VOTER ? s.voters : s.non_voters).push_back(srv.id);
    }
    std::sort(s.voters.begin(), s.voters.end());
    std::sort(s.non_voters.begin(), s.non_voters.end());
    s.changing = g->changing;
    out.push_back(std::move(s));
  }
  return out;
}

bool replicator::has_quorum() const {
  std::map<std::uint64_t, bool> up;
  for (const auto& l : links_.status()) up[l.peer] = l.out_connected;
  for (const auto& g : groups_) {
    const raft_configuration& c = g->r.configuration;
    std::size_t voters = 0, reachable = 0;
    for (unsigned i = 0; i < c.n; ++i) {
      if (c.servers[i].role != RAFT_VOTER) continue;
      ++voters;
      if (c.servers[i].id == opts_.self || up[c.servers[i].id]) ++reachable;
    }
    if (voters == 0 || reachable * 2 <= voters) return false;  // a node not added yet has no voters
    const std::uint64_t leader = leader_of(g->id);
    if (leader == 0) return false;
    if (leader != opts_.self && !up[leader]) return false;
  }
  return true;
}

}  // namespace weir::cluster
