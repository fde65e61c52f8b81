#include "unit/cluster/lane_sim.h"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/clock.h"
#include "raft/node_log.h"
#include "replica/partition.h"
#include "replica/raft_lane.h"
#include "storage/mem_env.h"
#include "storage/segment_reader.h"
#include "support/sim/delayed_flusher.h"
#include "support/sim/mem_network.h"
#include "support/sim/sim_disk_worker.h"
#include "support/sim/sim_faults.h"
#include "support/sim/sim_scheduler.h"
#include "unit/cluster/mem_links.h"
#include "unit/streams/command_builders.h"

namespace weir::cluster::sim {
namespace {

using std::chrono::milliseconds;

constexpr const char* data_dir = "/data";

class lane_sim;

// One node: its disk lives across incarnations, everything else is its process.
struct sim_node final : replica::partition_host, replica::lane_host {
  lane_sim* sim = nullptr;
  std::uint64_t id = 0;
  bool up = false;
  int incarnation = 0;
  std::int64_t disk_max_ms = 2;
  std::unique_ptr<storage::mem_env> env = std::make_unique<storage::mem_env>();
  std::unique_ptr<raft::sim_executor> ex;
  std::unique_ptr<replica::testing::sim_disk_worker> worker;
  // By lane: each lane's links (on a network of its own), data log reader, partition and raft lane.
  std::vector<std::unique_ptr<mem_links>> links;
  std::vector<std::unique_ptr<storage::segment_reader>> readers;
  std::vector<std::unique_ptr<replica::partition>> parts;
  std::vector<std::unique_ptr<replica::raft_lane>> lanes;
  std::uint32_t groups = 1;

  // The lane of a stream: its group's (group g runs on lane g % lanes).
  std::size_t lane_of(std::string_view path) const {
    return replica::cluster_group_of(path, groups) % lanes.size();
  }
  replica::raft_lane& lane(std::string_view path) { return *lanes[lane_of(path)]; }
  replica::partition& part(std::string_view path) { return *parts[lane_of(path)]; }

  void on_durable(const streams::outcome&) override {}
  void on_rebuilt() override {}
  void on_writes_resumed() override {}
  void post_to_lane(std::uint32_t, std::function<void()> fn) override { ex->post(std::move(fn)); }
  void on_applied(const streams::outcome&, bool) override {}
  void on_restored(const streams::state_machine::path_predicate&, const std::vector<std::string>&) override {}
  void on_in_flight_down() override {}
  void fail(const std::string& why) override;
};

struct sim_client {
  int id = 0;
  int sent = 0;
  bool done = false;
  std::uint64_t attempt = 0;  // the attempt a completion must match
  sim_node* on = nullptr;     // the node the attempt waits on
};

class lane_sim {
 public:
  explicit lane_sim(const lane_sim_options& o) : o_(o), sched_(o.seed) {
    for (int l = 0; l < o.lanes; ++l) nets_.push_back(std::make_unique<raft::mem_network>(sched_));
  }

  lane_sim_report run();
  void node_failed(sim_node& n, const std::string& why);

 private:
  template <class... Args>
  void note(fmt::format_string<Args...> f, Args&&... args) {
    raft::sim_trace(o_.verbose, sched_, f, std::forward<Args>(args)...);
  }
  void fail(const std::string& what) { raft::sim_fail(report_, o_.seed, sched_, what); }
  static std::string path_of(int s) { return fmt::format("/s{}", s); }

  void start_node(sim_node& n);
  void stop_node(sim_node& n, bool power_loss);
  void end_process(sim_node& n);
  void each_net(const std::function<void(raft::mem_network&)>& fn) {
    for (auto& w : nets_) fn(*w);
  }
  void tick(sim_node& n, int incarnation);
  sim_node* random_up_node();
  void create_streams(int s);
  void client_step(sim_client& c);
  void fault_step();
  void verify(std::size_t node, int stream);
  void check_end();

  lane_sim_options o_;
  raft::sim_scheduler sched_;
  std::vector<std::unique_ptr<raft::mem_network>> nets_;  // by lane
  manual_clock clock_{1'700'000'000'000};
  std::vector<std::unique_ptr<sim_node>> nodes_;
  std::vector<sim_client> clients_;
  std::vector<std::set<std::string>> submitted_, acked_;  // by stream
  // What each node read of each stream once it applied everything committed (verify).
  std::vector<std::vector<std::optional<std::string>>> read_;
  bool recovering_ = false;
  bool finished_ = false;
  lane_sim_report report_;
};

void sim_node::fail(const std::string& why) {
  sim->node_failed(*this, why);
}

void lane_sim::start_node(sim_node& n) {
  n.env->restart();
  ++n.incarnation;
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
    readers.push_back(n.readers.back().get());
  }
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
    lo.lane = l;
    lo.data_dir = "";
    lo.fork_sweep_ms = 0;
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
  for (auto& lane : n.lanes) lane->start();
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

void lane_sim::stop_node(sim_node& n, bool power_loss) {
  if (!n.up) return;
  if (power_loss) {
    ++report_.crashes;
    if (sched_.chance(0.5)) {
      n.env->crash(sched_.rng()());
    } else {
      n.env->crash();
    }
  }
  note("node {} {}", n.id, power_loss ? "loses power" : "is killed");
  n.up = false;
  n.ex->halt();
  end_process(n);
  for (sim_client& c : clients_) {
    if (c.on != &n) continue;
    c.on = nullptr;
    ++c.attempt;
    ++report_.not_acked;
    sched_.at(milliseconds(sched_.uniform(1, 30)), [this, &c] { client_step(c); });
  }
}

// The counts of a process that ends, then its objects, lanes before the partitions they apply to.
void lane_sim::end_process(sim_node& n) {
  for (std::size_t l = 0; l < n.lanes.size(); ++l) {
    report_.evicted += n.parts[l]->hot().evicted();
    report_.data_syncs += n.parts[l]->data()->stats().syncs;
    report_.snapshots += n.lanes[l]->replicator().snapshots_taken();
    n.lanes[l]->stop();
    n.parts[l]->stop();
  }
  n.lanes.clear();
  n.parts.clear();
  n.readers.clear();
  n.worker.reset();
  n.links.clear();
  n.ex.reset();
}

void lane_sim::node_failed(sim_node& n, const std::string& why) {
  const int inc = n.incarnation;
  sched_.at(milliseconds(0), [this, &n, inc, why] {
    if (!n.up || n.incarnation != inc) return;
    note("node {}: {}: it stops", n.id, why);
    stop_node(n, true);
    sched_.at(milliseconds(sched_.uniform(100, 1500)), [this, &n] {
      if (!n.up) start_node(n);
    });
  });
}

sim_node* lane_sim::random_up_node() {
  std::vector<sim_node*> up;
  for (auto& n : nodes_)
    if (n->up) up.push_back(n.get());
  if (up.empty()) return nullptr;
  return up[static_cast<std::size_t>(sched_.uniform(0, static_cast<std::int64_t>(up.size()) - 1))];
}

// Creates stream s (again until it is acknowledged), then the next; the clients start after the last.
void lane_sim::create_streams(int s) {
  if (s == o_.streams) {
    for (sim_client& c : clients_) client_step(c);
    return;
  }
  sim_node* n = random_up_node();
  if (n == nullptr) return (void)sched_.at(milliseconds(50), [this, s] { create_streams(s); });
  (void)n->lane(path_of(s))
      .submit(streams::testing::make_create(path_of(s), "application/octet-stream"),
              [this, s](replica::durable_result& r) {
                const bool ok = r.failure == replica::errc::ok && r.o.code == streams::errc::ok;
                note("create {}: {}", path_of(s), ok ? "acknowledged" : "failed");
                sched_.at(milliseconds(ok ? 0 : 100), [this, s, ok] { create_streams(ok ? s + 1 : s); });
              });
}

void lane_sim::client_step(sim_client& c) {
  if (finished_ || c.on != nullptr) return;
  if (c.sent == o_.appends_per_client) {
    c.done = true;
    return;
  }
  sim_node* n = random_up_node();
  if (n == nullptr) return (void)sched_.at(milliseconds(50), [this, &c] { client_step(c); });
  const int s = static_cast<int>(sched_.uniform(0, o_.streams - 1));
  // A unique token, padded so that the streams outgrow the hot tier many times over.
  const std::string token = fmt::format("c{}n{}-{};", c.id, c.sent,
                                        std::string(static_cast<std::size_t>(sched_.uniform(20, 400)), 'x'));
  ++c.sent;
  submitted_[static_cast<std::size_t>(s)].insert(token);
  c.on = n;
  const std::uint64_t attempt = ++c.attempt;
  (void)n->lane(path_of(s))
      .submit(streams::testing::make_append(path_of(s), token),
              [this, &c, attempt, s, token](replica::durable_result& r) {
                if (c.attempt != attempt) return;
                c.on = nullptr;
                if (r.failure == replica::errc::ok && r.o.code == streams::errc::ok) {
                  ++report_.acked;
                  acked_[static_cast<std::size_t>(s)].insert(token);
                } else {
                  ++report_.not_acked;
                  note("client {}: {} failed ({})", c.id, token.substr(0, token.find('-')),
                       replica::errc_name(r.failure));
                }
                sched_.at(milliseconds(sched_.uniform(0, 20)), [this, &c] { client_step(c); });
              });
}

void lane_sim::fault_step() {
  if (recovering_ || !report_.ok) return;
  sched_.at(milliseconds(sched_.uniform(200, 600)), [this] { fault_step(); });
  const std::int64_t pick = sched_.uniform(0, 9);
  sim_node& n = *nodes_[static_cast<std::size_t>(sched_.uniform(0, o_.nodes - 1))];
  if (pick <= 1) {
    each_net([&](raft::mem_network& w) { w.partition({raft::node_id(n.id)}); });
    ++report_.partitions;
    note("partition: node {} cut off", n.id);
  } else if (pick <= 3) {
    each_net([](raft::mem_network& w) { w.heal(); });
    note("network heals");
  } else if (pick <= 6) {
    for (const auto& m : nodes_)
      if (!m->up) return;  // one node down at a time: the others keep a quorum
    const bool power_loss = pick == 6;
    if (!power_loss) ++report_.kills;
    stop_node(n, power_loss);
    sched_.at(milliseconds(sched_.uniform(100, 2000)), [this, &n] {
      if (!n.up && !recovering_) start_node(n);
    });
  } else if (pick == 7) {
    n.disk_max_ms = raft::random_sync_latency_ms(sched_);
    note("node {}: sync latency up to {} ms", n.id, n.disk_max_ms);
  } else {
    const raft::link_faults f = raft::random_link_faults(sched_);
    each_net([&](raft::mem_network& w) { w.set_all_links(f); });
    note("links: loss {}, delay 1-{} ms, reorder {}", f.drop, f.max_delay.count(), f.reorder);
  }
}

// Once node `node` applied everything committed in the stream's group before now (a read index),
// reads the stream through its partition (records that left memory come from the data log).
void lane_sim::verify(std::size_t node, int s) {
  sim_node& n = *nodes_[node];
  n.lane(path_of(s)).linearize(path_of(s), 0, [this, node, s, &n](bool ok) {
    if (!ok) {
      note("node {}: no read index for {} yet", n.id, path_of(s));
      return (void)sched_.at(milliseconds(50), [this, node, s] { verify(node, s); });
    }
    std::string content;
    std::optional<streams::stream_offset> from = streams::stream_offset(0);
    for (;;) {
      status io;
      streams::read_result rr = n.part(path_of(s)).read_visible(path_of(s), from, 1 << 20, &io);
      if (!io) return fail(fmt::format("node {}: reading {} failed: {}", n.id, path_of(s), io.err().reason));
      if (rr.code != streams::errc::ok) {
        return fail(
            fmt::format("node {}: {} cannot be read (code {})", n.id, path_of(s), static_cast<int>(rr.code)));
      }
      for (const auto& slice : rr.plan.slices) content += slice.view();
      if (rr.plan.bytes == 0 || rr.plan.up_to_date) break;
      from = rr.plan.next;
    }
    read_[node][static_cast<std::size_t>(s)] = std::move(content);
    check_end();
  });
}

void lane_sim::check_end() {
  for (const auto& per_node : read_)
    for (const auto& r : per_node)
      if (!r) return;
  finished_ = true;
  for (int s = 0; s < o_.streams; ++s) {
    const auto si = static_cast<std::size_t>(s);
    const std::string& first = *read_[0][si];
    for (std::size_t k = 1; k < read_.size(); ++k) {
      if (*read_[k][si] != first) {
        return fail(fmt::format("{}: node {} holds {} bytes, node 1 {} (they differ)", path_of(s), k + 1,
                                read_[k][si]->size(), first.size()));
      }
    }
    std::map<std::string, int> seen;
    for (std::size_t b = 0, e; b < first.size(); b = e + 1) {
      e = first.find(';', b);
      if (e == std::string::npos) return fail(fmt::format("{}: a torn token at byte {}", path_of(s), b));
      const std::string token = first.substr(b, e - b + 1);
      if (!submitted_[si].contains(token))
        return fail(fmt::format("{}: {} was never submitted", path_of(s), token));
      if (++seen[token] > 1) return fail(fmt::format("{}: {} is there twice", path_of(s), token));
    }
    for (const std::string& token : acked_[si]) {
      if (!seen.contains(token)) return fail(fmt::format("{}: acknowledged {} is lost", path_of(s), token));
    }
  }
}

lane_sim_report lane_sim::run() {
  for (int i = 0; i < o_.nodes; ++i) {
    nodes_.push_back(std::make_unique<sim_node>());
    nodes_.back()->sim = this;
    nodes_.back()->id = static_cast<std::uint64_t>(i + 1);
  }
  submitted_.assign(static_cast<std::size_t>(o_.streams), {});
  acked_.assign(static_cast<std::size_t>(o_.streams), {});
  for (int i = 0; i < o_.clients; ++i) clients_.push_back(sim_client{i});
  for (auto& n : nodes_) start_node(*n);
  sched_.at(milliseconds(1000), [this] { create_streams(0); });
  if (o_.faults) sched_.at(milliseconds(1500), [this] { fault_step(); });
  sched_.at(milliseconds(o_.fault_phase_ms), [this] {
    recovering_ = true;
    each_net([](raft::mem_network& w) {
      w.heal();
      w.set_all_links(raft::link_faults{});
    });
    note("recovery: the network heals, every node starts");
    for (auto& n : nodes_) {
      n->disk_max_ms = 2;
      if (!n->up) start_node(*n);
    }
  });
  // Once every client finished and the faults are over: every node reads every stream.
  std::function<void()> probe = [this, &probe] {
    bool ready = recovering_;
    int done = 0;
    for (const sim_client& c : clients_) done += c.done ? 1 : 0;
    ready = ready && done == o_.clients;
    if (!ready) {
      if (recovering_ && sched_.now_ms() % 1000 < 50) note("{} of {} clients done", done, o_.clients);
      return (void)sched_.at(milliseconds(50), probe);
    }
    read_.assign(nodes_.size(),
                 std::vector<std::optional<std::string>>(static_cast<std::size_t>(o_.streams)));
    for (std::size_t k = 0; k < nodes_.size(); ++k)
      for (int s = 0; s < o_.streams; ++s) verify(k, s);
  };
  sched_.at(milliseconds(o_.fault_phase_ms), probe);
  const std::int64_t limit = o_.fault_phase_ms + o_.recovery_limit_ms;
  while (report_.ok && !finished_ && sched_.now_ms() <= limit && sched_.run_one()) {
  }
  if (report_.ok && !finished_) {
    // Where each node's groups stand: what a stuck run is stuck on.
    std::string where;
    for (const auto& n : nodes_) {
      if (!n->up) continue;
      for (const auto& lane : n->lanes)
        for (const auto& g : lane->replicator().status()) {
          where +=
              fmt::format("; node {} group {}: {} term {} leader {} commit {} applied {} last {}", n->id,
                          g.group, g.role, g.term, g.leader, g.commit_index, g.applied_index, g.last_index);
        }
    }
    fail("the run did not finish within the recovery limit" + where);
  }
  for (auto& n : nodes_) {
    if (!n->up) continue;
    n->ex->halt();
    end_process(*n);
  }
  report_.tasks = sched_.tasks_run();
  return report_;
}

}  // namespace

lane_sim_report run_lane_sim(const lane_sim_options& o) {
  return lane_sim(o).run();
}

}  // namespace weir::cluster::sim
