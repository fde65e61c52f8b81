// stream_shard's cluster mode (docs/replication.md): commands applied once committed, the data log,
// group snapshots' parts, fork releases and the fork sweep through raft, and what a fork whose source is
// another lane's stream asks of that lane (docs/replication.md, "Lanes").
#include <algorithm>

#include "base/log.h"
#include "server/node.h"
#include "server/replication.h"
#include "server/stream_shard.h"

namespace weir::server {

void stream_shard::attach_replication(std::unique_ptr<replication> r) {
  repl_ = std::move(r);
  part_.use_commit_path(*repl_);  // every command through raft from now on
  streams::fork_sweep::ports p;
  p.leads = [this](std::uint32_t g) { return repl_->leads_group(g); };
  p.group_of = [this](std::string_view path) { return repl_->group_of(path); };
  // The fork's group may be another lane's: its read index and its machine are that lane's. Answered on
  // a later turn here: a pass walks its references one after another through these callbacks.
  p.find_fork = [this](std::uint32_t g, const std::string& fork, const streams::fork_origin& origin,
                       std::function<void(std::optional<bool>)> found) {
    stream_shard& there = node_->shard_of_group(g);
    auto ask = [this, &there, g, fork, origin, found = std::move(found)]() mutable {
      there.repl_->linearize_group(g,
                                   [this, &there, fork, origin, found = std::move(found)](bool ok) mutable {
                                     std::optional<bool> exists;
                                     if (ok) exists = there.sm_.fork_exists(fork, origin);
                                     loop_->post([found = std::move(found), exists] { found(exists); });
                                   });
    };
    if (&there == this) return ask();
    there.loop().post(std::move(ask));
  };
  // A tombstone goes to the fork's group (its lane's shard proposes it), a release to the source's.
  p.propose = [this](const streams::command& c, std::function<void(const streams::outcome*)> done) {
    stream_shard& there = node_->owner_of(streams::command_path(c));
    auto run = [this, &there, c, done = std::move(done)]() mutable {
      // Shutting down: the pass ends here (nothing is proposed after stop()).
      if (there.stopped_) return loop_->post([done = std::move(done)] { done(nullptr); });
      (void)there.execute(c, [this, done = std::move(done)](replica::durable_result& d) mutable {
        std::optional<streams::outcome> o;
        if (d.failure == replica::errc::ok) o = std::move(d.o);
        loop_->post([done = std::move(done), o = std::move(o)] { done(o ? &*o : nullptr); });
      });
    };
    if (&there == this) return run();
    there.loop().post(std::move(run));
  };
  fork_sweep_ = std::make_unique<streams::fork_sweep>(sm_, std::move(p), opts_.fork_sweep_min_age_ms);
}

streams::outcome stream_shard::apply_committed(const streams::command& c, std::uint32_t group,
                                               std::uint64_t index, bool proposed_here) {
  sm_.set_entry_place(group, index);
  streams::outcome o = sm_.apply(c);
  if (o.mutated) part_.recount_streams();
  // A fork's link to its source's log is not in the command (like a replayed one): link it here, on
  // every node. The source lives on this shard, or on another lane's (ask_for_source).
  if (const auto* create = std::get_if<streams::create_command>(&c);
      create && create->fork && o.created && create->fork->resolved.point.value() > 0) {
    if (auto log = sm_.log_of(create->fork->source)) {
      sm_.stitch_fork(create->path, std::move(log));
    } else if (&node_->owner_of(create->fork->source) != this) {
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
  // The record it added goes to the data log.
  part_.write_applied(c, o);
  effects(o, proposed_here);
  return o;
}

void stream_shard::ask_for_source(const std::string& fork, const std::string& source) {
  stream_shard& there = node_->owner_of(source);
  there.loop().post([&there, self = this, source, fork] { there.lend_log(source, self, fork); });
}

namespace {
// A log every fork link above it is known for: it may be read from another loop.
bool linked_all_the_way(const streams::memory_log* l) {
  for (; l != nullptr; l = l->source().get()) {
    if (l->base().value() > 0 && !l->source()) return false;
  }
  return true;
}
}  // namespace

void stream_shard::lend_log(const std::string& source, stream_shard* to, const std::string& fork) {
  auto log = sm_.log_of(source);
  if (!log || !linked_all_the_way(log.get())) {
    lend_waiting_.emplace(source, std::make_pair(to, fork));
    return;
  }
  to->loop().post([to, fork, source, log = std::move(log)]() mutable {
    to->take_lent_log(fork, source, std::move(log));
  });
}

void stream_shard::answer_lend_requests() {
  std::vector<std::pair<std::string, std::pair<stream_shard*, std::string>>> ready;
  for (auto it = lend_waiting_.begin(); it != lend_waiting_.end();) {
    auto log = sm_.log_of(it->first);
    if (log && linked_all_the_way(log.get())) {
      ready.emplace_back(it->first, it->second);
      it = lend_waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [source, asker] : ready) lend_log(source, asker.first, asker.second);
}

void stream_shard::take_lent_log(const std::string& fork, const std::string& source,
                                 std::shared_ptr<const streams::memory_log> log) {
  // Deleted meanwhile, or linked already (a second answer to a second request).
  if (!sm_.awaits_link(fork, source)) return;
  sm_.stitch_fork(fork, std::move(log));
  if (!lend_waiting_.empty()) answer_lend_requests();
}

void stream_shard::link_waiting_forks(const std::string& source) {
  auto [b, e] = unlinked_forks_.equal_range(source);
  if (b == e) return;
  std::vector<std::string> waiting;
  for (auto it = b; it != e; ++it) waiting.push_back(it->second);
  unlinked_forks_.erase(b, e);
  auto log = sm_.log_of(source);
  for (const auto& link : sm_.forks_to_stitch()) {
    if (link.source == source && std::find(waiting.begin(), waiting.end(), link.path) != waiting.end()) {
      sm_.stitch_fork(link.path, log);
    }
  }
}

status stream_shard::restore_part(std::span<const std::byte> blob,
                                  const streams::state_machine::path_predicate& in_part) {
  std::vector<std::string> removed;
  if (auto st = sm_.restore_part(blob, in_part, &removed); !st) return st;
  part_.recount_streams();
  for (const std::string& path : removed) node_->report_deleted(path);
  // Every live reader of the part looks again (its stream may have grown, closed, or gone).
  std::vector<std::string> paths;
  for (const auto& [path, reader] : readers_)
    if (in_part(path) && (paths.empty() || paths.back() != path)) paths.push_back(path);
  for (const std::string& path : paths)
    wake(path, std::find(removed.begin(), removed.end(), path) != removed.end());
  part_.persist_unlocated(in_part);
  // Lanes: forks of the part whose source is another lane's ask that lane for its log, and requests
  // for this lane's logs that the part answers are answered.
  if (repl_ && node_->shard_count() > 1) {
    for (const auto& link : sm_.forks_to_stitch()) {
      if (in_part(link.path) && &node_->owner_of(link.source) != this) ask_for_source(link.path, link.source);
    }
  }
  if (!lend_waiting_.empty()) answer_lend_requests();
  return {};
}

void stream_shard::arm_fork_sweep() {
  if (stopped_ || !fork_sweep_ || opts_.fork_sweep_ms <= 0) return;
  fork_sweep_timer_ = loop_->add_timer(std::chrono::milliseconds(opts_.fork_sweep_ms), [this] {
    fork_sweep_timer_ = 0;
    if (stopped_) return;
    if (!repl_->left()) fork_sweep_->run(now_ms());
    arm_fork_sweep();
  });
}

}  // namespace weir::server
