// raft_lane's side of the state machine: commands applied once committed, a group snapshot's restore,
// the links of forks to their sources' logs (across lanes too: docs/replication.md, "Lanes"), and the
// fork sweep through raft.
#include <algorithm>

#include "base/log.h"
#include "replica/raft_lane.h"

namespace weir::replica {

streams::outcome raft_lane::apply_committed(const streams::command& c, std::uint32_t group,
                                            std::uint64_t index, bool proposed_here,
                                            const streams::disk_location* stored) {
  streams::state_machine& sm = part_.machine();
  sm.set_entry_place(group, index);
  streams::outcome o = sm.apply(c);
  if (o.mutated) part_.recount_streams();
  // A fork's link to its source's log is not in the command (like a replayed one): link it here, on
  // every node. The source lives on this lane, or on another lane's partition (ask_for_source).
  if (const auto* create = std::get_if<streams::create_command>(&c);
      create && create->fork && o.created && create->fork->resolved.point.value() > 0) {
    if (auto log = sm.log_of(create->fork->source)) {
      sm.stitch_fork(create->path, std::move(log));
    } else if (lane_index_of(create->fork->source) != opts_.lane) {
      ask_for_source(create->path, create->fork->source);  // another lane's stream
    } else {
      // The source's group is behind the fork's here (groups replay independently after a restart):
      // linked when the source's create is applied.
      unlinked_forks_.emplace(create->fork->source, create->path);
    }
  }
  if (const auto* create = std::get_if<streams::create_command>(&c);
      create && o.created && !unlinked_forks_.empty()) {
    link_waiting_forks(create->path);
  }
  if (o.created && !lend_waiting_.empty()) answer_lend_requests();
  // The record it added points into the node log, or goes to the data log; the cold tier follows.
  if (stored != nullptr) needed_.reset();
  part_.write_applied(c, o, stored);
  part_.follow_applied(c, o);
  host_.on_applied(o, proposed_here);
  return o;
}

void raft_lane::ask_for_source(const std::string& fork, const std::string& source) {
  const std::uint32_t l = lane_index_of(source);
  // lanes_ is read when the task runs: connect_lanes has run by then (a restore at start asks before).
  host_.post_to_lane(l, [this, l, source, fork] { lanes_[l]->lend_log(source, this, fork); });
}

namespace {
// A log every fork link above it is known for: it may be read from another executor.
bool linked_all_the_way(const streams::memory_log* l) {
  for (; l != nullptr; l = l->source().get()) {
    if (l->base().value() > 0 && !l->source()) return false;
  }
  return true;
}
}  // namespace

void raft_lane::lend_log(const std::string& source, raft_lane* to, const std::string& fork) {
  auto log = part_.machine().log_of(source);
  if (!log || !linked_all_the_way(log.get())) {
    lend_waiting_.emplace(source, std::make_pair(to, fork));
    return;
  }
  host_.post_to_lane(to->opts_.lane, [to, fork, source, log = std::move(log)]() mutable {
    to->take_lent_log(fork, source, std::move(log));
  });
}

void raft_lane::answer_lend_requests() {
  std::vector<std::pair<std::string, std::pair<raft_lane*, std::string>>> ready;
  for (auto it = lend_waiting_.begin(); it != lend_waiting_.end();) {
    auto log = part_.machine().log_of(it->first);
    if (log && linked_all_the_way(log.get())) {
      ready.emplace_back(it->first, it->second);
      it = lend_waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [source, asker] : ready) lend_log(source, asker.first, asker.second);
}

void raft_lane::take_lent_log(const std::string& fork, const std::string& source,
                              std::shared_ptr<const streams::memory_log> log) {
  // Deleted meanwhile, or linked already (a second answer to a second request).
  if (!part_.machine().awaits_link(fork, source)) return;
  part_.machine().stitch_fork(fork, std::move(log));
  if (!lend_waiting_.empty()) answer_lend_requests();
}

void raft_lane::link_waiting_forks(const std::string& source) {
  auto [b, e] = unlinked_forks_.equal_range(source);
  if (b == e) return;
  std::vector<std::string> waiting;
  for (auto it = b; it != e; ++it) waiting.push_back(it->second);
  unlinked_forks_.erase(b, e);
  streams::state_machine& sm = part_.machine();
  auto log = sm.log_of(source);
  for (const auto& link : sm.forks_to_stitch()) {
    if (link.source == source && std::find(waiting.begin(), waiting.end(), link.path) != waiting.end()) {
      sm.stitch_fork(link.path, log);
    }
  }
}

status raft_lane::restore_part(std::span<const std::byte> blob,
                               const streams::state_machine::path_predicate& in_part) {
  streams::state_machine& sm = part_.machine();
  std::vector<std::string> removed;
  needed_.reset();
  if (auto st = sm.restore_part(blob, in_part, &removed); !st) return st;
  part_.recount_streams();
  host_.on_restored(in_part, removed);
  part_.persist_unlocated(in_part);
  // Forks of the part left unlinked: one whose source is another lane's asks that lane for its log
  // (lanes); one whose source is this lane's but not created here yet (its group is behind the fork's
  // after a restart) is linked when that create is applied, like a fork whose create is applied before
  // its source's (link_waiting_forks). Requests for this lane's logs that the part answers are answered.
  for (const auto& link : sm.forks_to_stitch()) {
    if (!in_part(link.path)) continue;
    if (lane_index_of(link.source) != opts_.lane) {
      ask_for_source(link.path, link.source);
    } else if (!sm.log_of(link.source)) {
      unlinked_forks_.emplace(link.source, link.path);
    }
  }
  if (!lend_waiting_.empty()) answer_lend_requests();
  return {};
}

void raft_lane::open_fork_sweep() {
  streams::fork_sweep::ports p;
  p.leads = [this](std::uint32_t g) { return repl_->leads(g); };
  p.group_of = [this](std::string_view path) { return group_of(path); };
  // The fork's group may be another lane's: its read index and its machine are that lane's. Answered on
  // a later turn here: a pass walks its references one after another through these callbacks.
  p.find_fork = [this](std::uint32_t g, const std::string& fork, const streams::fork_origin& origin,
                       std::function<void(std::optional<bool>)> found) {
    raft_lane& there = lane_of_group(g);
    auto ask = [this, &there, g, fork, origin, found = std::move(found)]() mutable {
      there.linearize_group(g, [this, &there, fork, origin, found = std::move(found)](bool ok) mutable {
        std::optional<bool> exists;
        if (ok) exists = there.part_.machine().fork_exists(fork, origin);
        host_.post_to_lane(opts_.lane, [found = std::move(found), exists] { found(exists); });
      });
    };
    on_lane(there, std::move(ask));
  };
  // A tombstone goes to the fork's group (its lane proposes it), a release to the source's.
  p.propose = [this](const streams::command& c, std::function<void(const streams::outcome*)> done) {
    raft_lane& there = lane_of_group(group_of(streams::command_path(c)));
    auto run = [this, &there, c, done = std::move(done)]() mutable {
      // Shutting down: the pass ends here (nothing is proposed after stop()).
      if (there.stopped_) {
        return host_.post_to_lane(opts_.lane, [done = std::move(done)] { done(nullptr); });
      }
      (void)there.submit(c, [this, done = std::move(done)](durable_result& d) mutable {
        std::optional<streams::outcome> o;
        if (d.failure == errc::ok) o = std::move(d.o);
        host_.post_to_lane(opts_.lane,
                           [done = std::move(done), o = std::move(o)] { done(o ? &*o : nullptr); });
      });
    };
    on_lane(there, std::move(run));
  };
  fork_sweep_ =
      std::make_unique<streams::fork_sweep>(part_.machine(), std::move(p), opts_.fork_sweep_min_age_ms);
}

void raft_lane::start() {
  arm_fork_sweep();
  arm_kept_drop();
}

void raft_lane::stop() {
  stopped_ = true;
  if (fork_sweep_timer_ != 0) ex_.cancel_timer(fork_sweep_timer_);
  fork_sweep_timer_ = 0;
  if (kept_timer_ != 0) ex_.cancel_timer(kept_timer_);
  kept_timer_ = 0;
}

void raft_lane::arm_fork_sweep() {
  if (stopped_ || !fork_sweep_ || opts_.fork_sweep_ms <= 0) return;
  fork_sweep_timer_ = ex_.add_timer(std::chrono::milliseconds(opts_.fork_sweep_ms), [this] {
    fork_sweep_timer_ = 0;
    if (stopped_) return;
    if (!repl_->left()) fork_sweep_->run(part_.now_ms());
    arm_fork_sweep();
  });
}

}  // namespace weir::replica
