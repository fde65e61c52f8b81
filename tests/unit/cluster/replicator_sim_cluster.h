// A 3-node (or 4-node) cluster of real replicators and libraft groups on the simulation's network, disks
// and clock, for the replicator tests (replicator_membership_test.cc, replicator_leading_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cluster/membership.h"
#include "cluster/replicator.h"
#include "mem_links.h"
#include "raft/node_log.h"
#include "storage/mem_env.h"
#include "support/sim/delayed_flusher.h"
#include "support/sim/mem_network.h"
#include "support/sim/sim_scheduler.h"

namespace weir::cluster::sim {

using std::chrono::milliseconds;

inline std::string address_of(std::uint64_t id) {
  return fmt::format("127.0.0.1:{}", 5000 + id);
}

// A membership change's answer (replicator::membership_done), kept for the test to look at.
struct answer {
  bool done = false;
  result<membership> r = membership{};
};

inline replicator::membership_done keep(answer& a) {
  return [&a](result<membership> r) {
    ASSERT_FALSE(a.done) << "a change answered twice";
    a.done = true;
    a.r = std::move(r);
  };
}

// mem_links as peer_links treats nodes that are not its peers: frames from them are refused (their id
// goes to the stranger handler) and frames to them are lost; add_peer and remove_peer change who is a
// peer. mem_links alone delivers everything to everyone, which a removed node would not get. Like a
// dialer's hello, a frame on channel hello_channel goes to every peer every 500 ms, whatever else is sent
// (a node waiting to be added sends nothing else).
class peer_only_links final : public links {
 public:
  static constexpr std::uint8_t hello_channel = 200;

  peer_only_links(raft::executor& ex, sim::mem_links& inner, std::set<std::uint64_t> peers)
      : ex_(ex), inner_(inner), peers_(std::move(peers)), raft_(*this) {
    inner_.raft_transport().set_receiver([this](raft::node_id from, std::span<const std::byte> packet) {
      if (admit(from.value()) && raft_.recv) raft_.recv(from, packet);
    });
    set_receiver(nullptr);
    hello();
  }
  ~peer_only_links() override { ex_.cancel_timer(hello_timer_); }
  void set_receiver(receiver r) override {
    inner_.set_receiver(
        [this, r = std::move(r)](std::uint64_t from, std::uint8_t ch, std::span<const std::byte> p) {
          if (admit(from) && r && ch != hello_channel) r(from, ch, p);
        });
  }
  void send(std::uint64_t to, std::uint8_t channel, std::span<const std::byte> payload) override {
    if (peers_.contains(to)) inner_.send(to, channel, payload);
  }
  raft::transport& raft_transport() override { return raft_; }
  std::vector<link_status> status() const override {
    std::vector<link_status> out;
    for (const auto& s : inner_.status())
      if (peers_.contains(s.peer)) out.push_back(s);
    return out;
  }
  weir::status add_peer(std::uint64_t id, std::string_view) override {
    peers_.insert(id);
    return {};
  }
  void remove_peer(std::uint64_t id) override { peers_.erase(id); }
  void set_stranger_handler(stranger_handler h) override { on_stranger_ = std::move(h); }
  void forget_incarnation(std::uint64_t id) override { forgotten.insert(id); }
  std::map<std::uint64_t, std::uint64_t> refused;  // frames refused, per sender
  std::set<std::uint64_t> forgotten;               // the ids whose incarnation the replicator forgot

 private:
  struct adapter final : raft::transport {
    explicit adapter(peer_only_links& o) : owner(o) {}
    void send(raft::node_id to, std::vector<std::byte> packet) override {
      if (owner.peers_.contains(to.value())) owner.inner_.raft_transport().send(to, std::move(packet));
    }
    void set_receiver(receiver r) override { recv = std::move(r); }
    peer_only_links& owner;
    receiver recv;
  };
  void hello() {
    for (std::uint64_t p : peers_) inner_.send(p, hello_channel, {});
    hello_timer_ = ex_.add_timer(milliseconds(500), [this] { hello(); });
  }
  bool admit(std::uint64_t from) {
    if (peers_.contains(from)) return true;
    ++refused[from];
    if (on_stranger_) on_stranger_(from);
    return false;
  }
  raft::executor& ex_;
  raft::executor::timer_id hello_timer_ = 0;
  sim::mem_links& inner_;
  std::set<std::uint64_t> peers_;
  adapter raft_;
  stranger_handler on_stranger_;
};

// A lane of a node after the first (replicator.h, "Lanes"): its own executor, network and node log.
struct sim_lane {
  std::unique_ptr<raft::sim_executor> ex;
  std::unique_ptr<sim::mem_links> links;
  std::unique_ptr<peer_only_links> peer_only;
  std::unique_ptr<replicator> repl;
};

struct sim_node {
  std::uint64_t id = 0;
  storage::mem_env env;
  // Lane 0 (the only one unless the cluster has lanes).
  std::unique_ptr<raft::sim_executor> ex;
  std::unique_ptr<sim::mem_links> links;
  std::unique_ptr<peer_only_links> peer_only;  // set: the replicator runs on it
  std::unique_ptr<replicator> repl;
  std::vector<sim_lane> more;  // lanes 1.. (membership_cluster's `lanes`)

  // Every lane's replicator (none while the node is down).
  std::vector<replicator*> replicators() const {
    std::vector<replicator*> out;
    if (!repl) return out;
    out.push_back(repl.get());
    for (const auto& l : more) out.push_back(l.repl.get());
    return out;
  }
};

class membership_cluster {
 public:
  // Nodes 1-3 bootstrap the cluster; with `joining`, node 4 starts as with --join (in no group).
  // With `balance`, leaders spread over the nodes as the server's do (replicator::options::balance_leaders).
  // With `peer_only`, links refuse nodes that are not their peers, as peer_links does. With `lanes` > 1,
  // each node runs that many replicators of two groups each, lane 0 deciding and the others following
  // it (replicator.h, "Lanes"), each lane on a network of its own, as a server's lanes have their own
  // connections.
  explicit membership_cluster(std::uint64_t seed, unsigned snapshot_threshold = 0, bool joining = false,
                              bool balance = false, bool peer_only = false, unsigned lanes = 1)
      : sched_(seed),
        net_(sched_),
        snapshot_threshold_(snapshot_threshold),
        balance_(balance),
        peer_only_(peer_only),
        lanes_(lanes) {
    for (unsigned l = 1; l < lanes_; ++l) lane_nets_.push_back(std::make_unique<raft::mem_network>(sched_));
    for (std::uint64_t id = 1; id <= (joining ? 4u : 3u); ++id) {
      nodes_.push_back(std::make_unique<sim_node>());
      nodes_.back()->id = id;
    }
    for (auto& n : nodes_) start(*n);
  }

  void start(sim_node& n) {
    n.env.restart();
    ASSERT_TRUE(n.env.create_dirs("/raft"));  // as the server's data directory has it
    for (unsigned l = 0; l < lanes_; ++l) {
      if (l == 0) {
        open_lane(n, 0, n.ex, n.links, n.peer_only, n.repl);
      } else {
        sim_lane& lane = n.more.emplace_back();
        open_lane(n, l, lane.ex, lane.links, lane.peer_only, lane.repl);
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
    auto post_to = [](raft::sim_executor* ex) {
      return [ex](std::function<void()> fn) { ex->post(std::move(fn)); };
    };
    std::vector<replicator::lane_port> ports{{n.repl.get(), post_to(n.ex.get())}};
    for (auto& l : n.more) ports.push_back({l.repl.get(), post_to(l.ex.get())});
    replicator::connect_lanes(ports);
  }

  void open_lane(sim_node& n, std::uint32_t lane, std::unique_ptr<raft::sim_executor>& ex,
                 std::unique_ptr<sim::mem_links>& lane_links, std::unique_ptr<peer_only_links>& peer_only,
                 std::unique_ptr<replicator>& repl) {
    ex = std::make_unique<raft::sim_executor>(sched_);
    std::vector<std::uint64_t> peers;
    for (const auto& m : nodes_)
      if (m->id != n.id) peers.push_back(m->id);
    lane_links =
        std::make_unique<sim::mem_links>(lane == 0 ? net_ : *lane_nets_[lane - 1], n.id, peers,
                                         [this](std::uint64_t p) { return nodes_[p - 1]->repl != nullptr; });
    replicator::options o;
    o.lane = lane;
    o.lanes = lanes_;
    o.self = n.id;
    for (const auto& m : nodes_)
      if (m->id <= 3 || m->id == n.id) o.addresses.emplace(m->id, address_of(m->id));
    o.join = n.id == 4;
    o.groups = 2 * lanes_;
    o.log_path = lane == 0 ? "/raft/node.log" : fmt::format("/raft/node-{}.log", lane);
    o.members_path = "/raft/members";
    o.election_timeout_ms = 300;
    o.heartbeat_ms = 50;
    o.submit_timeout = milliseconds(1500);
    o.read_timeout = milliseconds(1000);
    o.id_seed = sched_.rng()() | 1;
    o.balance_leaders = balance_;
    replicator::callbacks cb;
    cb.apply = [this, id = n.id](std::uint32_t g, std::uint64_t, entry_kind kind, std::span<const std::byte>,
                                 std::uint64_t, const command_place*) {
      if (kind == entry_kind::streams) ++applied_[id][g];
    };
    cb.failed = [this](std::uint64_t ticket, submit_error e) { failed_[ticket] = e; };
    if (snapshot_threshold_ != 0) {
      o.snapshot_threshold = snapshot_threshold_;
      o.snapshot_trailing = 1;
      cb.snapshot = [](std::uint32_t, std::uint64_t) -> result<std::vector<std::byte>> {
        return std::vector<std::byte>{std::byte{42}};
      };
      cb.restore = [](std::uint32_t, std::uint64_t, std::span<const std::byte> state) -> status {
        if (state.size() != 1 || state[0] != std::byte{42}) return error{1, "not the state snapshot() made"};
        return {};
      };
    }
    auto flusher = std::make_unique<raft::delayed_flusher>(*ex, [] { return milliseconds(1); });
    if (peer_only_) {
      std::set<std::uint64_t> linked;
      for (const auto& [id, addr] : o.addresses)
        if (id != n.id) linked.insert(id);
      peer_only = std::make_unique<peer_only_links>(*ex, *lane_links, std::move(linked));
    }
    links& l = peer_only ? static_cast<links&>(*peer_only) : *lane_links;
    auto r = replicator::open(*ex, std::move(flusher), n.env, l, std::move(o), std::move(cb));
    ASSERT_TRUE(r) << r.err().reason;
    repl = std::move(r).value();
  }

  void stop(sim_node& n) {
    n.ex->halt();
    for (auto& l : n.more) l.ex->halt();
    for (auto& l : n.more) {
      l.repl.reset();
      l.peer_only.reset();
      l.links.reset();
    }
    n.more.clear();
    n.repl.reset();
    n.peer_only.reset();
    n.links.reset();
    n.ex.reset();
  }

  sim_node& node(std::uint64_t id) { return *nodes_[id - 1]; }

  // Runs the simulation until `done()` or `limit_ms` of simulated time have passed.
  bool run_until(const std::function<bool()>& done, std::int64_t limit_ms = 20000) {
    const std::int64_t end = sched_.now_ms() + limit_ms;
    while (!done() && sched_.now_ms() < end && sched_.run_one()) {
    }
    return done();
  }

  bool every_group_led() {
    for (const auto& n : nodes_) {
      if (!n->repl || n->id > 3) continue;
      for (const replicator* r : n->replicators())
        for (const auto& g : r->status())
          if (g.leader == 0) return false;
    }
    return true;
  }

  // Every running node of `m` applied `m` and acts on it (a node that left may miss what follows).
  bool agree_on(const membership& m) {
    for (const auto& n : nodes_) {
      if (!n->repl || !m.members.contains(n->id)) continue;
      const auto& c = n->repl->committed_membership();
      if (!c || *c != m) return false;
      for (const replicator* r : n->replicators())
        if (r->desired_membership() != m) return false;
    }
    return true;
  }

  // Every running node of `m` sees exactly `m`'s nodes as the voters of every group.
  bool voters_are(const membership& m) {
    std::vector<std::uint64_t> want;
    for (const auto& [id, addr] : m.members) want.push_back(id);
    for (const auto& n : nodes_) {
      if (!n->repl || !m.members.contains(n->id)) continue;
      for (const replicator* r : n->replicators()) {
        for (const auto& g : r->status()) {
          auto have = g.voters;
          std::sort(have.begin(), have.end());
          if (have != want || !g.non_voters.empty()) return false;
        }
      }
    }
    return true;
  }

  // Commands of kind `streams` each node applied, per group (all its runs); submits that failed.
  unsigned applied(std::uint64_t node, std::uint32_t group) { return applied_[node][group]; }
  const std::map<std::uint64_t, submit_error>& failed() const { return failed_; }

  raft::sim_scheduler& sched() { return sched_; }
  raft::mem_network& net() { return net_; }

 private:
  raft::sim_scheduler sched_;
  raft::mem_network net_;
  unsigned snapshot_threshold_;
  bool balance_;
  bool peer_only_;
  unsigned lanes_;
  std::vector<std::unique_ptr<raft::mem_network>> lane_nets_;  // lanes 1..
  std::vector<std::unique_ptr<sim_node>> nodes_;
  std::map<std::uint64_t, std::map<std::uint32_t, unsigned>> applied_;
  std::map<std::uint64_t, submit_error> failed_;
};

}  // namespace weir::cluster::sim
