// The lane simulation's nodes (a partition and a raft lane per lane), its faults and its run
// (lane_sim.h).
#include "unit/cluster/lane_sim.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "raft/node_log.h"
#include "support/sim/delayed_flusher.h"
#include "unit/cluster/lane_sim_model.h"

namespace weir::cluster::sim {

using std::chrono::milliseconds;

namespace {
constexpr const char* data_dir = "/data";
}  // namespace

std::vector<replicator::group_status> sim_node::status() const {
  std::vector<replicator::group_status> out;
  for (const auto& lane : lanes)
    for (auto& s : lane->replicator().status()) out.push_back(std::move(s));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.group < b.group; });
  return out;
}

void sim_node::fail(const std::string& why) {
  sim->node_failed(*this, why);
}

void sim_node::on_applied(const streams::outcome& o, bool releases) {
  sim->node_applied(*this, o, releases);
}

bool lane_sim::reaches_majority(const sim_node& n) const {
  if (!n.up) return false;
  std::size_t k = 0;
  for (const auto& m : nodes_)
    if (m->up && nets_[0]->connected(raft::node_id(n.id), raft::node_id(m->id))) ++k;
  return k * 2 > nodes_.size();
}

// --- nodes ------------------------------------------------------------------------------------

void lane_sim::start_node(sim_node& n) {
  n.env->restart();
  n.env->fail_next_syncs(0);  // a disk error that did not strike before the node went down
  ++n.incarnation;
  ++epoch_;
  n.groups = static_cast<std::uint32_t>(o_.groups);
  n.ex = std::make_unique<raft::sim_executor>(sched_);
  n.worker = std::make_unique<replica::testing::sim_disk_worker>(
      *n.ex, [this, &n] { return milliseconds(sched_.uniform(0, n.disk_max_ms)); });
  std::vector<std::uint64_t> peers;
  for (const auto& m : nodes_)
    if (m->id != n.id) peers.push_back(m->id);
  const auto lanes = static_cast<std::uint32_t>(o_.lanes);
  auto data_dir_of = [](std::uint32_t l) {
    return l == 0 ? std::string(data_dir) : fmt::format("{}-{}", data_dir, l);
  };
  std::vector<storage::segment_reader*> readers;  // every lane's data log, read by every lane (as a server's)
  for (std::uint32_t l = 0; l < lanes; ++l) {
    n.links.push_back(std::make_unique<mem_links>(*nets_[l], n.id, peers,
                                                  [this](std::uint64_t p) { return nodes_[p - 1]->up; }));
    n.readers.push_back(std::make_unique<storage::segment_reader>(*n.env, data_dir_of(l)));
  }
  // Then every lane's node log (replica::raft_lane::node_log_core), as a server's.
  for (std::uint32_t l = 0; l < lanes; ++l)
    n.readers.push_back(replica::raft_lane::node_log_reader(*n.env, "", l));
  for (const auto& r : n.readers) readers.push_back(r.get());
  for (std::uint32_t l = 0; l < lanes; ++l) {
    replica::partition_options po;
    po.core = l;
    po.hot_bytes = o_.hot_bytes;
    n.parts.push_back(std::make_unique<replica::partition>(*n.ex, clock_, po, n));
    if (auto st =
            n.parts[l]->open_data_log(*n.env, data_dir_of(l), o_.data_segment_bytes, readers, n.worker.get());
        !st) {
      return fail(fmt::format("node {}: lane {}'s data log does not open: {}", n.id, l, st.err().reason));
    }
  }
  std::vector<replica::raft_lane*> all;
  for (std::uint32_t l = 0; l < lanes; ++l) {
    replica::raft_lane_options lo;
    lo.cluster.node_id = n.id;
    for (const auto& m : nodes_) lo.cluster.peers.emplace(m->id, peer_address{fmt::format("n{}", m->id), 1});
    lo.cluster.groups = n.groups;
    lo.cluster.lanes = lanes;
    lo.cluster.election_timeout_ms = 300;
    lo.cluster.snapshot_entries = o_.snapshot_entries;
    lo.cluster.snapshot_trailing = 4;
    lo.cluster.log_segment_bytes = o_.log_segment_bytes;
    lo.kept_drop_ms = 500;
    lo.lane = l;
    lo.data_dir = "";
    lo.fork_sweep_ms = releasing_ ? o_.fork_sweep_ms : 0;
    lo.fork_sweep_min_age_ms = o_.fork_sweep_min_age_ms;
    lo.first_transfer_id = sched_.rng()() >> 2 | 1;
    lo.adjust = [seed = sched_.rng()() | 1](replicator::options& ro) {
      ro.submit_timeout = milliseconds(1500);
      ro.read_timeout = milliseconds(1000);
      ro.id_seed = seed;
    };
    auto flusher = std::make_unique<raft::delayed_flusher>(
        *n.ex, [this, &n] { return milliseconds(sched_.uniform(0, n.disk_max_ms)); });
    auto lane = replica::raft_lane::open(*n.parts[l], *n.ex, std::move(flusher), *n.links[l], *n.env, n,
                                         std::move(lo));
    if (!lane)
      return fail(fmt::format("node {}: raft lane {} does not open: {}", n.id, l, lane.err().reason));
    n.lanes.push_back(std::move(*lane));
    n.parts[l]->use_commit_path(*n.lanes[l]);
    all.push_back(n.lanes[l].get());
  }
  // A node's lanes share its executor here (a server's run on loops of their own).
  replica::raft_lane::connect_lanes(all);
  if (o_.cold) attach_cold(n);
  for (auto& lane : n.lanes) lane->start();
  for (auto& part : n.parts) part->start_cold();
  n.up = true;
  tick(n, n.incarnation);
  note("node {} starts (incarnation {})", n.id, n.incarnation);
}

// The shard's sweeper: the data log's syncs and reclaims.
void lane_sim::tick(sim_node& n, int incarnation) {
  n.ex->add_timer(milliseconds(250), [this, &n, incarnation] {
    if (!n.up || n.incarnation != incarnation) return;
    for (auto& part : n.parts) part->tick(n.ex->now_ms());
    tick(n, incarnation);
  });
}

// The node's process ends: with `power_loss`, unsynced bytes are gone too (half the time a torn prefix
// of them survives). Queued tasks never run; every client waiting on the node learns nothing more.
void lane_sim::stop_node(sim_node& n, bool power_loss) {
  if (!n.up) return;
  ++epoch_;
  if (power_loss) {
    ++report_.crashes;
    if (sched_.chance(0.5)) {
      ++report_.torn_crashes;
      n.env->crash(sched_.rng()());
    } else {
      n.env->crash();
    }
  }
  note("node {} {}", n.id, power_loss ? "loses power" : "is killed");
  n.up = false;
  n.ex->halt();
  end_process(n);
  auto waiting = std::move(n.waiting);
  n.waiting.clear();
  for (auto& [serial, a] : waiting) {
    if (ops_[a.op].kind == op_kind::read) {
      end_read(a, n, ending::node_lost);
    } else {
      end_write(a, ending::node_lost, nullptr);
    }
  }
  auto side = std::move(n.side);
  n.side.clear();
  for (auto& [serial, done] : side) sched_.at(milliseconds(0), [done = std::move(done)] { done(nullptr); });
}

// The counts of a process that ends, then its objects, lanes before the partitions they apply to.
void lane_sim::end_process(sim_node& n) {
  count_cold(n);
  for (std::size_t l = 0; l < n.lanes.size(); ++l) {
    report_.evicted += n.parts[l]->hot().evicted();
    report_.data_syncs += n.parts[l]->data()->stats().syncs;
    report_.node_log_records += n.parts[l]->node_log_records();
    report_.kept_dropped += n.lanes[l]->kept().dropped;
    report_.snapshots += n.lanes[l]->replicator().snapshots_taken();
    report_.releases_recovered += n.lanes[l]->fork_sweep_counts().recovered;
    n.lanes[l]->stop();
    n.parts[l]->stop();
  }
  n.lanes.clear();
  n.parts.clear();
  n.readers.clear();
  n.fetcher.reset();
  n.worker.reset();
  n.links.clear();
  n.ex.reset();
}

void lane_sim::restart_later(sim_node& n, std::int64_t lo, std::int64_t hi) {
  sched_.at(milliseconds(sched_.uniform(lo, hi)), [this, &n] {
    if (!n.up && report_.ok && (!recovering_ || releasing_)) start_node(n);
  });
}

// What node::fail makes a server do: the process stops; a supervisor starts it again. Not from inside
// the node's own executor, which stop_node destroys.
void lane_sim::node_failed(sim_node& n, const std::string& why) {
  const int inc = n.incarnation;
  sched_.at(milliseconds(0), [this, &n, inc, why] {
    if (!n.up || n.incarnation != inc || !report_.ok) return;
    ++report_.disk_failures;
    note("node {}: {}: it stops", n.id, why);
    stop_node(n, true);
    if (recovering_ && !releasing_) return (void)start_node(n);
    restart_later(n, 100, 1500);
  });
}

// --- faults -----------------------------------------------------------------------------------

void lane_sim::schedule_faults() {
  sched_.at(milliseconds(sched_.uniform(150, 800)), [this] {
    if (recovering_ || !report_.ok) return;
    fault_step();
    schedule_faults();
  });
}

void lane_sim::fault_step() {
  const std::int64_t pick = sched_.uniform(0, 13);
  if (pick <= 2) {
    std::set<raft::node_id> side;
    for (const auto& n : nodes_)
      if (sched_.chance(0.4)) side.insert(raft::node_id(n->id));
    if (side.empty() || side.size() == nodes_.size())
      side = {raft::node_id(nodes_[static_cast<std::size_t>(sched_.uniform(0, o_.nodes - 1))]->id)};
    each_net([&](raft::mem_network& w) { w.partition(side); });
    ++report_.partitions;
    ++epoch_;
    std::string ids;
    for (raft::node_id id : side) ids += fmt::format(" {}", id.value());
    note("partition: nodes{} cut off", ids);
  } else if (pick <= 4) {
    each_net([](raft::mem_network& w) { w.heal(); });
    ++epoch_;
    note("network heals");
  } else if (pick <= 8) {
    std::vector<sim_node*> up;
    for (auto& n : nodes_)
      if (n->up) up.push_back(n.get());
    if (up.size() < 2) return;
    // Sometimes two nodes go down together (one rack): only then can a write acknowledged before it was
    // durable on a majority disappear. A kill (pick 8) loses the process, not the page cache.
    const bool power_loss = pick != 8;
    const std::size_t victims = up.size() >= 3 && sched_.chance(0.35) ? 2 : 1;
    for (std::size_t k = 0; k < victims; ++k) {
      const auto i = static_cast<std::size_t>(sched_.uniform(0, static_cast<std::int64_t>(up.size()) - 1));
      sim_node& victim = *up[i];
      up.erase(up.begin() + static_cast<std::ptrdiff_t>(i));
      if (!power_loss) ++report_.kills;
      stop_node(victim, power_loss);
      restart_later(victim, 100, 2000);
    }
  } else if (pick >= 12 && sched_.chance(0.3)) {
    // A disk error: the node's next sync fails (its node log's or its data log's). A failed node log
    // stops the node (lane_host::fail), which recovers from what is on disk when it starts again.
    sim_node& n = *nodes_[static_cast<std::size_t>(sched_.uniform(0, o_.nodes - 1))];
    if (!n.up) return;
    n.env->fail_next_syncs(1);
    note("node {}: its next sync fails", n.id);
  } else if (pick >= 12) {
    sim_node& n = *nodes_[static_cast<std::size_t>(sched_.uniform(0, o_.nodes - 1))];
    n.disk_max_ms = raft::random_sync_latency_ms(sched_);
    note("node {}: sync latency up to {} ms", n.id, n.disk_max_ms);
  } else {
    const raft::link_faults f = raft::random_link_faults(sched_);
    each_net([&](raft::mem_network& w) { w.set_all_links(f); });
    note("links: loss {}, delay 1-{} ms, reorder {}", f.drop, f.max_delay.count(), f.reorder);
  }
}

// Every client finished and every node applied everything its groups committed.
bool lane_sim::is_quiet() const {
  for (const auto& c : clients_)
    if (!c.done) return false;
  std::vector<std::vector<replicator::group_status>> st;
  for (const auto& n : nodes_) {
    if (!n->up) return false;
    st.push_back(n->status());
  }
  for (std::size_t g = 0; g < st[0].size(); ++g) {
    if (st[0][g].leader == 0) return false;
    for (const auto& s : st) {
      if (s[g].applied_index != s[g].commit_index || s[g].commit_index != st[0][g].commit_index) return false;
    }
  }
  return true;
}

// --- the run ------------------------------------------------------------------------------------

lane_sim_report lane_sim::run() {
  for (int i = 0; i < o_.nodes; ++i) {
    nodes_.push_back(std::make_unique<sim_node>());
    nodes_.back()->sim = this;
    nodes_.back()->id = static_cast<std::uint64_t>(i + 1);
  }
  ready_.assign(static_cast<std::size_t>(all_streams()), false);
  forking_.assign(static_cast<std::size_t>(all_streams()), false);
  created_seq_.assign(static_cast<std::size_t>(all_streams()), 0);
  ops_.emplace_back();
  raft::link_faults base;
  base.drop = o_.faults ? 0.01 : 0.0;
  base.reorder = o_.faults && sched_.chance(0.5);
  each_net([&](raft::mem_network& w) { w.set_all_links(base); });
  for (auto& n : nodes_) start_node(*n);
  clients_.resize(static_cast<std::size_t>(o_.clients));
  for (int i = 0; i < o_.clients; ++i) {
    sim_client& c = clients_[static_cast<std::size_t>(i)];
    c.id = i;
    c.home = i % o_.streams;
    c.producer_id = fmt::format("p{}", i);
    schedule_client(c, 500, 600);  // once the groups elected their first leaders
  }
  if (o_.faults) sched_.at(milliseconds(1000), [this] { schedule_faults(); });

  while (report_.ok && sched_.now_ms() < o_.fault_phase_ms && sched_.run_one()) {
  }

  // Recovery: heal, reliable links, restart every node (its state rebuilt from its node log, its
  // snapshots and its data log), finish every client, wait until every node applied everything.
  recovering_ = true;
  note("faults stop: recovery");
  each_net([](raft::mem_network& w) {
    w.heal();
    w.set_all_links(raft::link_faults{});
  });
  for (auto& n : nodes_) {
    if (!report_.ok) break;
    n->disk_max_ms = 2;
    stop_node(*n, false);
    start_node(*n);
  }
  bool quiet = false;
  std::function<void()> probe = [this, &probe, &quiet] {
    if (is_quiet()) {
      quiet = true;
      return;
    }
    sched_.at(milliseconds(20), probe);
  };
  probe();  // every client not waiting for an answer has its next step queued already
  const std::int64_t limit = sched_.now_ms() + o_.recovery_limit_ms;
  while (report_.ok && !quiet && sched_.now_ms() < limit && sched_.run_one()) {
  }
  if (report_.ok && !quiet) {
    // Where each node's groups stand: what a stuck run is stuck on.
    std::string why;
    for (const auto& c : clients_)
      if (!c.done) why += fmt::format(" client {} not done (busy {}, op {});", c.id, c.busy, c.again);
    for (const auto& n : nodes_) {
      if (!n->up) {
        why += fmt::format(" n{} down;", n->id);
        continue;
      }
      for (const auto& g : n->status())
        why += fmt::format(" n{} g{}: {} term {} leader {} commit {} applied {} last {};", n->id, g.group,
                           g.role, g.term, g.leader, g.commit_index, g.applied_index, g.last_index);
    }
    fail("no quiet after recovery:" + why);
  }
  if (report_.ok) final_reads();
  if (report_.ok) check_final();
  if (report_.ok && o_.cold) check_cold();
  if (report_.ok && o_.lose_releases) release_phase();
  for (auto& n : nodes_) {
    if (!n->up) continue;
    // Every leadership this incarnation won and did not lose is one it holds: the replicator saw every
    // change of role (node_io's after-event hook runs after every tick and message).
    for (const auto& lane : n->lanes) {
      const replicator& r = lane->replicator();
      std::uint64_t leads = 0;
      for (const auto& g : r.status()) leads += std::string_view(g.role) == "leader" ? 1 : 0;
      const leadership_counts& lc = r.leadership();
      if (report_.ok && lc.leaderships_won - lc.leaderships_lost != leads) {
        fail(fmt::format("node {} lane {} counted {} leaderships won and {} lost, and leads {} groups", n->id,
                         r.lane(), lc.leaderships_won, lc.leaderships_lost, leads));
      }
    }
    n->up = false;
    n->ex->halt();
    end_process(*n);
  }
  report_.tasks = sched_.tasks_run();
  return report_;
}

lane_sim_report run_lane_sim(const lane_sim_options& o) {
  return lane_sim(o).run();
}

}  // namespace weir::cluster::sim
