// The lane simulation's fork releases (lane_sim.h, invariant 7): the releases a node proposes for the
// commands it proposed (lane_host::on_applied, as the server's stream_shard does), and the release phase
// that loses them as a server can, after which the production fork sweeps (raft_lane, a pass every
// fork_sweep_ms) must give every reference back.
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "unit/cluster/lane_sim_model.h"

namespace weir::cluster::sim {

using std::chrono::milliseconds;

// What the server's stream_shard::effects does with a command this node proposed: it proposes the
// releases it causes. In the release phase, half of them are lost, and the node that proposed the first
// delete causing one stops before it proposes any (docs/replication.md, "Forks": a release is lost with
// its node).
void lane_sim::node_applied(sim_node& n, const streams::outcome& o, bool releases) {
  if (!releases || o.release.empty()) return;
  if (!releasing_) {
    for (const auto& r : o.release) propose_release(n, r);
    return;
  }
  if (!killed_for_release_) {
    killed_for_release_ = true;
    report_.releases_lost += o.release.size();
    // Not from inside the node's apply, which stop_node destroys.
    sched_.at(milliseconds(0), [this, &n, inc = n.incarnation] {
      if (!n.up || n.incarnation != inc) return;
      stop_node(n, false);
      restart_later(n, 300, 800);
    });
    return;
  }
  for (const streams::fork_release_command& r : o.release) {
    if (sched_.chance(0.5)) {
      ++report_.releases_lost;  // never proposed
      continue;
    }
    // Sometimes twice (a release proposed again after an unknown outcome): harmless by origin.
    const int times = sched_.chance(0.3) ? 2 : 1;
    for (int k = 0; k < times; ++k) propose_release(n, r);
  }
}

// As stream_shard::propose_release: again a second later when no leader took it, or when its outcome is
// unknown and it names its origin (applied twice it changes nothing). Proposed on a later turn: never
// from inside the apply that caused it.
void lane_sim::propose_release(sim_node& n, const streams::fork_release_command& r) {
  n.ex->post([this, &n, r, inc = n.incarnation] {
    if (!n.up || n.incarnation != inc) return;
    (void)n.lane(r.source).submit(r, [this, &n, r, inc](replica::durable_result& d) {
      if (d.failure == replica::errc::ok || !n.up || n.incarnation != inc) return;
      if (d.failure != replica::errc::cluster_unavailable && !r.origin) return;
      n.ex->add_timer(milliseconds(1000), [this, &n, r, inc] {
        if (n.up && n.incarnation == inc) propose_release(n, r);
      });
    });
  });
}

void lane_sim::propose_side(sim_node& n, const streams::command& c,
                            std::function<void(const streams::outcome*)> done) {
  if (!n.up) {
    sched_.at(milliseconds(0), [done = std::move(done)] { done(nullptr); });
    return;
  }
  const std::uint64_t serial = n.next_serial++;
  n.side.emplace(serial, std::move(done));
  (void)n.lane(streams::command_path(c))
      .submit(c, [&n, serial, inc = n.incarnation](replica::durable_result& r) {
        if (!n.up || n.incarnation != inc) return;
        auto it = n.side.find(serial);
        if (it == n.side.end()) return;
        auto fn = std::move(it->second);
        n.side.erase(it);
        fn(r.failure == replica::errc::ok ? &r.o : nullptr);
      });
}

// Runs the script's commands one after another, each through a random node and again until answered.
void lane_sim::run_script(std::shared_ptr<std::vector<streams::command>> script, std::size_t i) {
  if (!report_.ok) return;
  if (i == script->size()) {
    script_done_ = true;
    note("release phase: script done");
    return;
  }
  sim_node& n = *nodes_[static_cast<std::size_t>(sched_.uniform(0, o_.nodes - 1))];
  if (!n.up) return (void)sched_.at(milliseconds(20), [this, script, i] { run_script(script, i); });
  // The command's time is when it is sent (a retain's age counts from it).
  streams::command c = (*script)[i];
  std::visit(
      [&](auto& v) {
        if constexpr (requires { v.now_ms; }) v.now_ms = clock_.wall_ms();
      },
      c);
  propose_side(n, c, [this, script, i, &n](const streams::outcome* out) {
    if (out == nullptr)
      return (void)sched_.at(milliseconds(50), [this, script, i] { run_script(script, i); });
    note("release phase: step {} answered by node {} (code {}, {} releases)", i, n.id,
         static_cast<int>(out->code), out->release.size());
    sched_.at(milliseconds(sched_.uniform(0, 20)), [this, script, i] { run_script(script, i + 1); });
  });
}

// Every node is up and applied everything committed, holds no fork reference, and no stream is left
// (the deleted sources that forks read from erased too).
bool lane_sim::releases_settled(std::string& why) {
  if (!script_done_) {
    why = "the script did not finish";
    return false;
  }
  if (!is_quiet()) {
    why = "the cluster is not quiet";
    return false;
  }
  for (const auto& n : nodes_) {
    for (const auto& part : n->parts) {
      const auto refs = part->machine().ref_counts();
      if (!refs.empty()) {
        why = fmt::format("node {} still holds fork references:", n->id);
        for (const auto& [path, count] : refs) why += fmt::format(" {}={}", path, count);
        return false;
      }
    }
    for (int s = 0; s < all_streams(); ++s) {
      if (n->part(path_of(s)).machine().log_of(path_of(s))) {
        why = fmt::format("node {} still holds stream {} (deleted)", n->id, s);
        return false;
      }
    }
  }
  return true;
}

void lane_sim::release_phase() {
  note("release phase: every node restarts with its fork sweeps on");
  releasing_ = true;
  for (auto& n : nodes_) {
    stop_node(*n, false);
    start_node(*n);
  }
  // Retains for forks that are never created (a create lost with its node, or refused), then every
  // source soft-deleted (forks read them), then every fork deleted, then the other streams.
  std::set<int> sources;
  std::vector<int> forks;
  for (int f = o_.streams; f < all_streams(); ++f) {
    if (!ready_[static_cast<std::size_t>(f)]) continue;
    forks.push_back(f);
    sources.insert(source_of(f));
  }
  auto script = std::make_shared<std::vector<streams::command>>();
  int ghost = all_streams();
  for (int s : sources) {
    streams::fork_retain_command r;
    r.source = path_of(s);
    r.fork = path_of(ghost++);
    script->push_back(r);
  }
  std::set<int> deleted;
  for (int s : sources) {
    script->push_back(streams::delete_command{path_of(s), 0});
    deleted.insert(s);
  }
  for (int f : forks)
    if (deleted.insert(f).second) script->push_back(streams::delete_command{path_of(f), 0});
  for (int s = 0; s < o_.streams; ++s)
    if (ready_[static_cast<std::size_t>(s)] && deleted.insert(s).second)
      script->push_back(streams::delete_command{path_of(s), 0});
  sched_.at(milliseconds(500), [this, script] { run_script(script, 0); });

  bool settled = false;
  std::string why;
  std::function<void()> probe = [&] {
    if (releases_settled(why)) {
      settled = true;
      return;
    }
    sched_.at(milliseconds(100), probe);
  };
  probe();
  const std::int64_t limit = sched_.now_ms() + o_.release_phase_limit_ms;
  while (report_.ok && !settled && sched_.now_ms() < limit && sched_.run_one()) {
  }
  if (!report_.ok) return;
  if (!settled)
    return fail(fmt::format("release phase: not settled after {} ms: {}", o_.release_phase_limit_ms, why));
  note("release phase settled: {} releases lost, {} references given back by the sweeps",
       report_.releases_lost, report_.releases_recovered);
}

}  // namespace weir::cluster::sim
