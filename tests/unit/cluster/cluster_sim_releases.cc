// The cluster simulation's release phase (cluster_sim.h, sim_options::lose_releases): fork releases lost
// as a server loses them, and the fork sweeps (streams/fork_sweep.h) that give the references back.
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cluster_sim_model.h"
#include "streams/command_codec.h"

namespace weir::cluster::sim {

using std::chrono::milliseconds;

std::uint32_t cluster::group_of_path(std::string_view path, int groups) {
  std::uint64_t s = 0;
  for (char c : path.substr(std::min<std::size_t>(2, path.size())))
    s = s * 10 + static_cast<std::uint64_t>(c - '0');
  return static_cast<std::uint32_t>(s % static_cast<std::uint64_t>(groups));
}

// What the server's stream_shard gives its fork sweep: this node's replicator and state machine.
void cluster::start_sweep(node& n) {
  streams::fork_sweep::ports p;
  p.leads = [&n](std::uint32_t g) { return n.lane_of(g).leads(g); };
  p.group_of = [groups = o.groups](std::string_view path) { return group_of_path(path, groups); };
  p.find_fork = [this, &n](std::uint32_t g, const std::string& fork, const streams::fork_origin& origin,
                           std::function<void(std::optional<bool>)> found) {
    n.lane_of(g).read_index(g, [this, &n, fork, origin, found = std::move(found)](bool ok) mutable {
      sched.at(milliseconds(0), [&n, fork, origin, found = std::move(found), ok] {
        if (!ok) return found(std::nullopt);
        found(n.sm->fork_exists(fork, origin));
      });
    });
  };
  p.propose = [this, &n](const streams::command& c, std::function<void(const streams::outcome*)> done) {
    propose_side(n, c, std::move(done));
  };
  n.sweep = std::make_unique<streams::fork_sweep>(*n.sm, std::move(p), o.fork_sweep_min_age_ms);
  arm_sweep(n);
}

void cluster::arm_sweep(node& n) {
  if (o.fork_sweep_ms <= 0) return;
  // On the node's executor: a node that goes down takes its timer with it (its next incarnation arms
  // its own).
  n.ex->add_timer(milliseconds(o.fork_sweep_ms), [this, &n] {
    if (!n.up || !n.sweep) return;
    n.sweep->run(sched.now_ms());
    arm_sweep(n);
  });
}

void cluster::propose_side(node& n, const streams::command& c,
                           std::function<void(const streams::outcome*)> done) {
  if (!n.up) {
    sched.at(milliseconds(0), [done = std::move(done)] { done(nullptr); });
    return;
  }
  const std::string bytes = streams::encode(c);
  const auto g = group_of_path(streams::command_path(c), o.groups);
  const std::uint64_t ticket = n.lane_of(g).submit(g, std::as_bytes(std::span(bytes.data(), bytes.size())));
  if (!n.side_writes.emplace(ticket, std::move(done)).second)
    fail(fmt::format("node {}: ticket {} given twice", n.id, ticket));
}

// Runs the script's commands one after another, each through a random node and again until answered;
// handles the releases each answer asks for as the release phase loses them.
void cluster::run_script(std::shared_ptr<std::vector<streams::command>> script, std::size_t i) {
  if (!report.ok) return;
  if (i == script->size()) {
    script_done = true;
    note("release phase: script done");
    return;
  }
  node& n = *nodes[static_cast<std::size_t>(sched.uniform(0, o.nodes - 1))];
  if (!n.up) {
    sched.at(milliseconds(20), [this, script, i] { run_script(script, i); });
    return;
  }
  // The command's time is when it is sent (a retain's age counts from it).
  streams::command c = (*script)[i];
  std::visit(
      [&](auto& v) {
        if constexpr (requires { v.now_ms; }) v.now_ms = sched.now_ms();
      },
      c);
  propose_side(n, c, [this, script, i, &n](const streams::outcome* out) {
    if (out == nullptr) {
      sched.at(milliseconds(50), [this, script, i] { run_script(script, i); });
      return;
    }
    note("release phase: step {} answered by node {} (code {}, {} releases)", i, n.id,
         static_cast<int>(out->code), out->release.size());
    if (!out->release.empty()) {
      if (!killed_for_release) {
        // The node that proposed the delete stops before it proposes the release (docs/replication.md,
        // "Forks": a release is lost with its node).
        killed_for_release = true;
        report.releases_lost += out->release.size();
        stop_node(n, false);
        sched.at(milliseconds(sched.uniform(300, 800)), [this, &n] {
          if (!n.up && report.ok) start_node(n);
        });
      } else {
        for (const streams::fork_release_command& r : out->release) {
          if (sched.chance(0.5)) {
            ++report.releases_lost;  // never proposed
            continue;
          }
          // Sometimes twice (a release proposed again after an unknown outcome): harmless by origin.
          const int times = sched.chance(0.3) ? 2 : 1;
          for (int k = 0; k < times; ++k) propose_side(n, r, [](const streams::outcome*) {});
        }
      }
    }
    sched.at(milliseconds(sched.uniform(0, 20)), [this, script, i] { run_script(script, i + 1); });
  });
}

// Every node is up and applied everything committed, holds no fork reference, and no stream a fork
// read from is left (soft-deleted sources erased).
bool cluster::releases_settled(std::string& why) const {
  if (!script_done) {
    why = "the script did not finish";
    return false;
  }
  if (!is_quiet()) {
    why = "the cluster is not quiet";
    return false;
  }
  for (const auto& n : nodes) {
    const auto refs = n->sm->ref_counts();
    if (!refs.empty()) {
      why = fmt::format("node {} still holds fork references:", n->id);
      for (const auto& [path, count] : refs) why += fmt::format(" {}={}", path, count);
      return false;
    }
    for (int s = 0; s < all_streams(); ++s) {
      if (n->sm->log_of(path_of(s))) {
        why = fmt::format("node {} still holds stream {} (deleted)", n->id, s);
        return false;
      }
    }
  }
  return true;
}

void cluster::release_phase() {
  note("release phase");
  sweeping = true;
  for (auto& n : nodes)
    if (n->up) start_sweep(*n);
  // Retains for forks that are never created (a create lost with its node, or refused), then every
  // source soft-deleted (forks read them), then every fork deleted.
  std::set<int> sources;
  std::vector<int> forks;
  for (int f = o.streams; f < all_streams(); ++f) {
    if (!ready[static_cast<std::size_t>(f)]) continue;
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
  for (int s = 0; s < o.streams; ++s)  // the other streams too: at the end nothing is left
    if (ready[static_cast<std::size_t>(s)] && deleted.insert(s).second)
      script->push_back(streams::delete_command{path_of(s), 0});
  run_script(script, 0);

  bool settled = false;
  std::string why;
  std::function<void()> probe = [&] {
    if (releases_settled(why)) {
      settled = true;
      return;
    }
    sched.at(milliseconds(100), probe);
  };
  probe();
  const std::int64_t limit = sched.now_ms() + o.release_phase_limit_ms;
  while (report.ok && !settled && sched.now_ms() < limit && sched.run_one()) {
  }
  if (!report.ok) return;
  if (!settled)
    return fail(fmt::format("release phase: not settled after {} ms: {}", o.release_phase_limit_ms, why));
  // Every node holds the same state, tombstones included (a part of each group, byte for byte).
  for (int g = 0; g < o.groups; ++g) {
    auto part = [&](const node& n) {
      return n.sm->snapshot_part(in_group(static_cast<std::uint32_t>(g)),
                                 [](const streams::disk_location&) { return false; });
    };
    const auto first = part(*nodes[0]);
    for (const auto& n : nodes) {
      const auto other = part(*n);
      if (!first || !other || *first != *other)
        return fail(fmt::format("release phase: group {}: node {}'s part differs from node {}'s", g, n->id,
                                nodes[0]->id));
    }
  }
  report.tombstones = nodes[0]->sm->tombstones();
  note("release phase settled: {} releases lost, {} tombstones", report.releases_lost, report.tombstones);
}

}  // namespace weir::cluster::sim
