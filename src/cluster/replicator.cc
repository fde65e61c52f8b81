#include "cluster/replicator.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <random>

#include "base/log.h"
#include "cluster/links.h"
#include "raft/libraft.h"
#include "raft/node_io.h"
#include "raft/node_log.h"

namespace weir::cluster {

using std::chrono::milliseconds;

namespace {
constexpr std::uint8_t raft_channel = 0;
constexpr std::uint8_t message_channel = 1;
constexpr milliseconds retry_delay{20};
constexpr milliseconds read_poll{2};
constexpr milliseconds read_resend{300};
// Membership: groups whose configuration this node changes at once (each change is one entry, and a new
// node's catch-up is a log's worth of replication), and how often the desired membership is sent again.
constexpr int max_changes_in_flight = 8;
constexpr std::int64_t change_retry_ms = 1000;
constexpr std::int64_t share_every_ms = 5000;

const raft_server* find_server(const raft_configuration& c, std::uint64_t id) {
  for (unsigned i = 0; i < c.n; ++i)
    if (c.servers[i].id == id) return &c.servers[i];
  return nullptr;
}

membership_update to_message(const membership& m) {
  return membership_update{m.epoch, m.members};
}
}  // namespace

// One group: its libraft instance and the reads that wait for its next quorum round.
struct replicator::group {
  replicator* owner = nullptr;
  std::uint32_t id = 0;
  ::raft r{};
  raft_fsm fsm{};
  // ReadIndex on the leader: reads that arrived since the running barrier was proposed wait for the next
  // one; each keeps the commit index recorded when it arrived (0: the barrier's own index, when the
  // commit index cannot be trusted yet in this term).
  using leader_read_fn = std::function<void(bool, std::uint64_t)>;
  std::vector<std::pair<std::uint64_t, leader_read_fn>> next_reads;
  std::vector<std::pair<std::uint64_t, leader_read_fn>> barrier_reads;
  bool barrier_running = false;
  struct ::raft_barrier barrier {};
  // A barrier of this term committed: the commit index covers every entry committed before the term.
  std::uint64_t trusted_term = 0;
  // Commit notification (notify_commit()): per follower, the commit index it was last told of.
  std::map<std::uint64_t, std::uint64_t> told;
  std::uint64_t told_term = 0;
  bool notify_posted = false;
  // Leadership hand-over (balance()).
  struct ::raft_transfer transfer {};
  bool transferring = false;
  std::int64_t last_transfer_ms = -1'000'000;
  // Membership: the configuration change in flight (start_change()), and when to try again after one
  // failed.
  struct ::raft_change change {};
  bool changing = false;
  std::int64_t next_change_ms = 0;
};

// The C callbacks libraft calls.
struct group_glue {
  static int apply(raft_fsm* fsm, const raft_buffer* buf, void** result) {
    auto* g = static_cast<replicator::group*>(fsm->data);
    replicator& self = *g->owner;
    *result = nullptr;
    const std::uint64_t index = g->r.last_applied + 1;
    auto entry = decode_entry(std::span<const std::byte>(static_cast<const std::byte*>(buf->base),
                                                         static_cast<std::size_t>(buf->len)));
    if (!entry) {
      // Every node applies the same bytes, so every node skips it alike.
      log::error("weir cluster: group {} entry {}: {}; skipped", g->id, index, entry.err().reason);
      return 0;
    }
    auto [header, command] = *entry;
    std::uint64_t ticket = 0;
    if (header.origin == self.opts_.self && header.ticket != 0 && self.submits_.erase(header.ticket) != 0) {
      ticket = header.ticket;
    }
    self.cb_.apply(g->id, index, header.kind, command, ticket);
    self.schedule_read_check();
    self.notify_commit(*g);
    return 0;
  }

  struct proposal {
    struct ::raft_apply req {};
    replicator* owner = nullptr;
    std::uint64_t origin = 0;
    std::uint64_t ticket = 0;
  };

  static void applied(struct ::raft_apply* req, int status, void*) {
    std::unique_ptr<proposal> p(static_cast<proposal*>(req->data));
    if (status == 0 || p->owner->closing_) return;
    replicator& self = *p->owner;
    if (p->origin == self.opts_.self) {
      self.resolve_failed(p->ticket, submit_error::unknown);
    } else if (p->ticket != 0) {
      self.send(p->origin, forward_reject{p->ticket, reject_reason::lost, 0});
    }
  }

  static void barrier_done(struct ::raft_barrier* req, int status) {
    auto* g = static_cast<replicator::group*>(req->data);
    auto reads = std::move(g->barrier_reads);
    g->barrier_reads.clear();
    g->barrier_running = false;
    if (status == 0) {
      g->trusted_term = g->r.current_term;
      g->owner->notify_commit(*g);
    }
    if (g->owner->closing_) return;
    if (status != 0) {
      // Leadership lost: libraft calls this while it tears its leader state down, still in the leader
      // state, so a new barrier now would be appended into that teardown (a crash). The reads waiting
      // for the next round fail too; their nodes retry with the new leader.
      auto waiting = std::move(g->next_reads);
      g->next_reads.clear();
      for (auto& [recorded, fn] : reads) fn(false, 0);
      for (auto& [recorded, fn] : waiting) fn(false, 0);
      return;
    }
    for (auto& [recorded, fn] : reads) fn(true, recorded != 0 ? recorded : req->index);
    if (!g->next_reads.empty()) g->owner->start_barrier(*g);
  }

  static void transferred(struct ::raft_transfer* req) {
    static_cast<replicator::group*>(req->data)->transferring = false;
  }

  // A configuration change committed (0), or failed: leadership lost, or libraft gave up catching a
  // new voter up. Called inside libraft (possibly while it tears its leader state down): the next step
  // is posted, never started here.
  static void changed(struct ::raft_change* req, int status) {
    auto* g = static_cast<replicator::group*>(req->data);
    replicator& self = *g->owner;
    g->changing = false;
    if (self.closing_) return;
    if (status != 0) {
      log::info("weir cluster: group {}: a membership change failed ({}); trying again", g->id,
                raft_strerror(status));
      g->next_change_ms = self.ex_.now_ms() + change_retry_ms;
      return;
    }
    self.ex_.post([p = &self, alive = self.alive_] {
      if (*alive && !p->closing_) p->reconcile();
    });
  }

  static void closed(struct ::raft*) {}
};

replicator::replicator(raft::executor& ex, links& l, options o, callbacks cb)
    : ex_(ex), links_(l), opts_(std::move(o)), cb_(std::move(cb)) {}

result<std::unique_ptr<replicator>> replicator::open(raft::executor& ex,
                                                     std::unique_ptr<raft::log_flusher> flusher,
                                                     storage::env& env, links& l, options o, callbacks cb) {
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
    } else if (s.opts_.join) {
      // Before anything else: a restart without --join must not bootstrap a configuration of its own.
      if (auto st = store_membership(env, s.opts_.members_path, membership{}); !st) return st.err();
      has_members_file = true;
    }
  }
  const bool bootstrap = !s.opts_.join && !has_members_file;
  auto log = raft::node_log::open(env, *s.flusher_, s.opts_.log_path);
  if (!log) return log.err();
  s.log_ = std::move(*log);
  std::map<raft::node_id, std::string> addresses;
  for (const auto& [id, addr] : s.opts_.addresses) addresses.emplace(raft::node_id(id), addr);
  s.io_ = std::make_unique<raft::node_io>(
      ex, l.raft_transport(), *s.log_,
      raft::node_io::options{raft::node_id(s.opts_.self), addresses, s.opts_.self});
  s.io_->set_after_append_result([p = &s](raft::group_id g) {
    if (g.value() < p->groups_.size()) p->notify_commit(*p->groups_[g.value()]);
  });
  l.set_receiver([p = &s](std::uint64_t from, std::uint8_t channel, std::span<const std::byte> bytes) {
    if (channel == message_channel) p->on_message(from, bytes);
  });
  const std::string& my_address = s.opts_.addresses.at(s.opts_.self);
  for (std::uint32_t i = 0; i < s.opts_.groups; ++i) {
    auto g = std::make_unique<group>();
    g->owner = &s;
    g->id = i;
    g->fsm.version = 1;
    g->fsm.data = g.get();
    g->fsm.apply = &group_glue::apply;
    if (int rv = raft_init(&g->r, s.io_->io_of(raft::group_id(i)), &g->fsm, s.opts_.self, my_address.c_str());
        rv != 0) {
      return error{rv, "raft_init of group " + std::to_string(i) + ": " + raft_strerror(rv)};
    }
    raft_set_election_timeout(&g->r, s.opts_.election_timeout_ms);
    raft_set_heartbeat_timeout(&g->r, s.opts_.heartbeat_ms);
    // No snapshots yet: the node log keeps every entry (docs/replication.md, "What remains").
    raft_set_snapshot_threshold(&g->r, UINT_MAX);
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
  if (!bootstrap && s.groups_[0]->r.configuration.n == 0) {
    log::info(
        "weir cluster: node {} has joined no cluster yet: waiting to be added (POST "
        "/cluster/members?id={}&address={} on a node of the cluster)",
        s.opts_.self, s.opts_.self, my_address);
  }
  s.arm_sweep();
  return self;
}

replicator::~replicator() {
  closing_ = true;
  *alive_ = false;
  if (sweep_timer_ != 0) ex_.cancel_timer(sweep_timer_);
  if (read_poll_timer_ != 0) ex_.cancel_timer(read_poll_timer_);
  links_.set_receiver(nullptr);
  for (auto& g : groups_) raft_close(&g->r, &group_glue::closed);  // node_io calls back synchronously
  groups_.clear();
  io_.reset();
  flusher_.reset();  // finishes a flush in flight before the file goes away
  log_.reset();
}

bool replicator::leads(std::uint32_t gi) const {
  return gi < groups_.size() && raft_state(const_cast<::raft*>(&groups_[gi]->r)) == RAFT_LEADER;
}

std::uint64_t replicator::leader_of(std::uint32_t gi) const {
  raft_id id = 0;
  const char* address = nullptr;
  raft_leader(const_cast<::raft*>(&groups_[gi]->r), &id, &address);
  return id;
}

std::uint64_t replicator::submit(std::uint32_t gi, std::span<const std::byte> command, entry_kind kind,
                                 bool here_only) {
  const std::uint64_t ticket = next_ticket_++;
  pending_submit& s = submits_[ticket];
  s.group = gi;
  s.entry = encode_entry(entry_header{opts_.self, ticket, kind}, command);
  s.here_only = here_only;
  s.deadline_ms = ex_.now_ms() + opts_.submit_timeout.count();
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
  const std::uint64_t leader = leader_of(s.group);
  if (leader == opts_.self) {
    s.proposed = true;
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
    send(leader, forward{s.group, s.entry});
    return;
  }
  s.retry_armed = true;
  after(retry_delay, [this, ticket] { try_submit(ticket); });
}

void replicator::propose(std::uint32_t gi, std::vector<std::byte> entry, std::uint64_t origin,
                         std::uint64_t ticket) {
  group& g = *groups_[gi];
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
  raft_buffer buf;
  buf.len = entry.size();
  buf.base = raft_malloc(entry.size());
  std::memcpy(buf.base, entry.data(), entry.size());
  auto* p = new group_glue::proposal;
  p->owner = this;
  p->origin = origin;
  p->ticket = ticket;
  p->req.data = p;
  if (int rv = raft_apply(&g.r, &p->req, &buf, 1, &group_glue::applied); rv != 0) {
    raft_free(buf.base);
    delete p;
    retry();
  }
}

void replicator::resolve_failed(std::uint64_t ticket, submit_error e) {
  if (submits_.erase(ticket) != 0 && cb_.failed) cb_.failed(ticket, e);
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
  const std::uint64_t leader = g < groups_.size() ? leader_of(g) : 0;
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
  group& g = *groups_[gi];
  if (raft_state(&g.r) != RAFT_LEADER) {
    done(false, 0);
    return;
  }
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
    if (r.have_index && groups_[r.group]->r.last_applied >= r.index) {
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
  auto m = decode(bytes);
  if (!m) {
    log::warn("weir cluster: from node {}: {}", from, m.err().reason);
    return;
  }
  if (auto* f = std::get_if<forward>(&*m)) {
    if (f->group >= groups_.size()) return;
    auto entry = decode_entry(f->entry);
    if (!entry) return;
    propose(f->group, std::vector<std::byte>(f->entry.begin(), f->entry.end()), entry->first.origin,
            entry->first.ticket);
  } else if (auto* rj = std::get_if<forward_reject>(&*m)) {
    auto it = submits_.find(rj->ticket);
    if (it == submits_.end()) return;
    if (rj->reason == reject_reason::lost) {
      resolve_failed(rj->ticket, submit_error::unknown);
    } else if (!it->second.retry_armed) {
      it->second.proposed = false;
      it->second.retry_armed = true;
      after(retry_delay, [this, t = rj->ticket] { try_submit(t); });
    }
  } else if (auto* rq = std::get_if<read_request>(&*m)) {
    if (rq->group >= groups_.size()) return;
    leader_read(rq->group, [this, from, id = rq->id, g = rq->group](bool ok, std::uint64_t index) {
      send(from, read_reply{id, ok, index, ok ? 0 : leader_of(g)});
    });
  } else if (auto* mu = std::get_if<membership_update>(&*m)) {
    membership theirs{mu->epoch, std::move(mu->members)};
    if (supersedes(theirs, desired_)) {
      if (auto ok = check_membership(theirs); !ok) {
        log::warn("weir cluster: node {} sent a membership this node cannot use: {}", from, ok.err().reason);
      } else if (auto st = adopt(theirs); !st) {
        log::error("weir cluster: membership epoch {} from node {}: {}", theirs.epoch, from, st.err().reason);
      }
    } else if (desired_.epoch > 0 && supersedes(desired_, theirs)) {
      send(from, to_message(desired_));  // it missed a change: catch it up now
    }
  } else if (auto* lc = std::get_if<leader_call>(&*m)) {
    const std::uint32_t g = lc->group;
    if (g >= groups_.size() || !cb_.serve) {
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
      reconcile();
      if (ex_.now_ms() >= next_share_ms_) share_membership();
      balance();
    }
    arm_sweep();
  });
}

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
      const unsigned timeout = r.follower_state.randomized_election_timeout;
      const unsigned left = std::min(timeout, soon(rng_));
      r.election_timer_start = static_cast<raft_time>(ex_.now_ms()) - (timeout - left);
    }
  }
}

void replicator::sweep() {
  const std::int64_t now = ex_.now_ms();
  watch_links();
  std::vector<std::pair<std::uint64_t, submit_error>> late;
  for (auto& [ticket, s] : submits_) {
    if (s.deadline_ms <= now)
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

void replicator::balance() {
  if (!opts_.balance_leaders) return;
  std::map<std::uint64_t, bool> up = links_up();
  const std::int64_t now = ex_.now_ms();
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
      ++started;
    }
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

std::map<std::uint64_t, bool> replicator::links_up() const {
  std::map<std::uint64_t, bool> up;
  for (const auto& l : links_.status()) up[l.peer] = l.out_connected && l.in_connected;
  return up;
}

// ---- Membership ----

result<membership> replicator::add_member(std::uint64_t id, std::string_view address) {
  auto base = current_membership();
  if (!base) return base.err();
  return change_membership(with_member(*base, id, address));
}

result<membership> replicator::remove_member(std::uint64_t id) {
  auto base = current_membership();
  if (!base) return base.err();
  return change_membership(without_member(*base, id));
}

result<membership> replicator::current_membership() const {
  if (desired_.epoch > 0) return desired_;
  // No change asked for yet: every group still has the configuration it was bootstrapped with.
  membership m;
  const raft_configuration& c = groups_[0]->r.configuration;
  for (unsigned i = 0; i < c.n; ++i) m.members.emplace(c.servers[i].id, c.servers[i].address);
  if (m.members.empty()) {
    return make_error(membership_errc::unknown, "node " + std::to_string(opts_.self) +
                                                    " has not joined a cluster yet: send the change to a "
                                                    "node of the cluster");
  }
  return m;
}

result<membership> replicator::change_membership(result<membership> next) {
  if (!next) return next.err();
  if (auto st = adopt(*next); !st) return st.err();
  share_membership();
  return desired_;
}

// Keeps `m` (members file first: a change acknowledged is not lost by a crash), links to its new nodes
// and starts the changes this node can make.
weir::status replicator::adopt(const membership& m) {
  if (!opts_.members_path.empty()) {
    if (auto st = store_membership(*env_, opts_.members_path, m); !st) return st;
  }
  desired_ = m;
  std::string list;
  for (const auto& [id, addr] : desired_.members) {
    list += fmt::format("{}{}={}", list.empty() ? "" : ",", id, addr);
    link_peer(id, addr);
  }
  log::info("weir cluster: node {}: membership epoch {}: {}", opts_.self, desired_.epoch, list);
  if (!desired_.members.contains(opts_.self)) {
    log::warn(
        "weir cluster: node {} is not a member of the cluster any more (membership epoch {}): the "
        "others stop talking to it once no group has it; stop it",
        opts_.self, desired_.epoch);
  }
  reconcile();
  return {};
}

void replicator::share_membership() {
  next_share_ms_ = ex_.now_ms() + share_every_ms;
  if (desired_.epoch == 0) return;
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
  for (std::uint64_t id : gone) {
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

void replicator::reconcile() {
  if (desired_.epoch == 0) return;
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
