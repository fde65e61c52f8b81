// cluster_sim_model: the cluster simulation's state and steps (the `cluster` of one run), private to
// the simulation's library: cluster_sim.cc runs it (nodes, clients, faults), cluster_sim_checks.cc holds
// the checks made at the end of a run (cluster_sim.h lists them). Single-threaded, on the scheduler's
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cluster/applied_waits.h"
#include "cluster/replicator.h"
#include "cluster_sim.h"
#include "mem_links.h"
#include "support/sim/mem_network.h"
#include "support/sim/sim_faults.h"
#include "support/sim/sim_scheduler.h"
#include "storage/mem_env.h"
#include "streams/fork_sweep.h"
#include "streams/state_machine.h"

namespace weir::cluster::sim {

enum class op_kind : std::uint8_t { create, plain, producer, read, fork };
enum class ending : std::uint8_t { answered, unknown, no_leader, node_lost };

// One client request; a producer append or a create is sent again (same op, same bytes) until answered.
struct op {
  std::uint64_t id = 0;
  op_kind kind = op_kind::read;
  int client = 0;
  int stream = 0;
  std::string command;          // the encoded streams command (writes)
  std::uint64_t start_seq = 0;  // event order of the first attempt
  std::int64_t start_ms = 0;
  std::uint64_t ack_seq = 0;  // 0: never acknowledged
  std::int64_t ack_ms = -1;
  bool no_leader = false;  // an attempt failed with submit_error::no_leader
  int attempts = 0;
  int stage = 0;  // a fork: 0 while its retain is sent, 1 once its create is (`command` then holds it)
};

// One attempt of an op on one node: a ticket (writes) or a read_index call (reads).
struct attempt {
  std::uint64_t op = 0;
  std::uint64_t epoch = 0;  // the cluster's connectivity epoch when it started
  bool minority = false;    // its node could not reach a majority then
  bool answered = false;    // a write's ticket was applied; the answer is on its way to the client
  std::uint64_t start_seq = 0;
};

// A served read: what the node's state machine held.
struct read_record {
  std::uint64_t op = 0;
  int stream = 0;
  std::uint64_t node = 0;
  std::uint64_t start_seq = 0, end_seq = 0;
  std::int64_t start_ms = 0, end_ms = 0;
  bool exists = false;
  std::string content;
};

struct node {
  std::uint64_t id = 0;
  std::unique_ptr<storage::mem_env> env = std::make_unique<storage::mem_env>();
  std::unique_ptr<raft::sim_executor> ex;
  std::unique_ptr<mem_links> links;
  std::unique_ptr<streams::state_machine> sm;
  std::unique_ptr<applied_waits> waits;  // how far each group applied here; fork reads wait on it
  std::unique_ptr<replicator> repl;      // lane 0
  std::vector<std::unique_ptr<mem_links>> more_links;  // lanes 1.. (sim_options::lanes)
  std::vector<std::unique_ptr<replicator>> more;
  // The replicator of group g's lane, and every lane's.
  replicator& lane_of(std::uint32_t g) {
    const std::size_t lane = g % (more.size() + 1);
    return lane == 0 ? *repl : *more[lane - 1];
  }
  std::vector<replicator*> replicators() const {
    std::vector<replicator*> out{repl.get()};
    for (const auto& r : more) out.push_back(r.get());
    return out;
  }
  // Every lane's groups, in group order.
  std::vector<replicator::group_status> status() const {
    std::vector<replicator::group_status> out;
    for (const replicator* r : replicators())
      for (auto& s : r->status()) out.push_back(std::move(s));
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.group < b.group; });
    return out;
  }
  std::vector<std::vector<std::uint64_t>> applied;  // per group: the indexes this incarnation applied
  std::map<std::uint64_t, attempt> writes;          // ticket -> attempt
  std::map<std::uint64_t, attempt> reads;           // read serial -> attempt
  // Proposals that are no client's (the fork sweep's, the release phase's): ticket -> what gets this
  // node's outcome (nullptr: failed, or the node went down).
  std::map<std::uint64_t, std::function<void(const streams::outcome*)>> side_writes;
  std::unique_ptr<streams::fork_sweep> sweep;  // while the release phase runs
  std::uint64_t next_read = 1;
  bool up = false;
  int incarnation = 0;
  std::int64_t disk_max_ms = 4;  // fdatasync latency: uniform in [0, disk_max_ms]
};

struct client {
  int id = 0;
  int home = 0;  // the stream its producer writes to
  std::string producer_id;
  std::uint64_t epoch = 0;
  std::uint64_t next_seq = 0;
  std::uint64_t again = 0;  // an op to send again until it is answered (producer append, create)
  std::vector<std::uint64_t> producer_ops;  // in the order they were made
  bool busy = false;
  int final_ops = 0;  // recovery phase: one append, one read, then done
  bool done = false;
  int read_next = -1;  // a fork it just created: its next op reads it (on a random node)
};

// One run: its nodes, clients and ops, the network and the clock, and what the checks compare at the end
// (every command applied at each (group, index), every served read). The steps are its member functions.
struct cluster {
  explicit cluster(const sim_options& opts) : o(opts), sched(opts.seed), net(sched) {
    for (int l = 1; l < o.lanes; ++l) lane_nets.push_back(std::make_unique<raft::mem_network>(sched));
  }

  sim_options o;
  raft::sim_scheduler sched;
  raft::mem_network net;                                      // lane 0's
  std::vector<std::unique_ptr<raft::mem_network>> lane_nets;  // lanes 1..: the same faults as net
  template <class F>
  void each_net(F fn) {
    fn(net);
    for (auto& n : lane_nets) fn(*n);
  }
  std::vector<std::unique_ptr<node>> nodes;
  std::vector<client> clients;
  std::deque<op> ops;                      // by id (ops[0] unused)
  std::vector<bool> ready;                 // per stream: its create was acknowledged
  std::vector<bool> forking;               // per fork: a client makes it (only one ever does)
  std::vector<std::uint64_t> created_seq;  // per stream: event order of the first acknowledged create
  std::vector<std::map<std::uint64_t, std::string>> canonical;  // per group: index -> command
  std::vector<read_record> reads;
  std::uint64_t events = 0;  // a logical clock ordering starts, answers and reads exactly
  std::uint64_t epoch = 0;   // bumped by every change of who can reach whom
  bool recovering = false;
  bool quiet = false;
  bool sweeping = false;            // the release phase: nodes run fork sweeps
  bool killed_for_release = false;  // the release phase killed the node that answered a delete
  bool script_done = false;
  sim_report report;

  template <class... Args>
  void note(fmt::format_string<Args...> f, Args&&... args) {
    raft::sim_trace(o.verbose, sched, f, std::forward<Args>(args)...);
  }

  void fail(const std::string& what) { raft::sim_fail(report, o.seed, sched, what); }

  static std::string path_of(int stream) { return fmt::format("/s{}", stream); }
  int all_streams() const { return o.streams + o.forks; }
  bool is_fork(int stream) const { return stream >= o.streams; }
  // The last fork (of several) is a fork of the first: reads of it wait along the chain.
  int source_of(int fork) const {
    if (o.forks >= 2 && fork == all_streams() - 1) return o.streams;
    return (fork - o.streams + 1) % o.streams;
  }
  std::uint32_t group_of(int stream) const { return static_cast<std::uint32_t>(stream % o.groups); }
  static std::string token_of(std::uint64_t op) { return fmt::format("[{}]", op); }
  std::function<bool(std::string_view)> in_group(std::uint32_t g) const;
  bool reaches_majority(const node& n) const;

  // Nodes, the state machine of each node, clients and faults (cluster_sim.cc).
  void start_node(node& n);
  void stop_node(node& n, bool power_loss);
  void count_leadership(const replicator& r) {
    report.elections_started += r.leadership().elections_started;
    report.leaderships_won += r.leadership().leaderships_won;
    report.leaderships_lost += r.leadership().leaderships_lost;
  }
  void restart_later(node& n, std::int64_t lo, std::int64_t hi);
  void on_apply(node& n, std::uint32_t g, std::uint64_t index, std::span<const std::byte> bytes,
                std::uint64_t ticket);
  void link_forks(node& n, const streams::command& c, const streams::outcome& out);
  status on_restore(node& n, std::uint32_t g, std::uint64_t index, std::span<const std::byte> state);
  void on_failed(node& n, std::uint64_t ticket, submit_error e);
  op& new_op(client& c, op_kind kind, int stream);
  void schedule_client(client& c, std::int64_t lo, std::int64_t hi);
  void client_step(client& c);
  void start_attempt(client& c, op& p, node& n);
  void wait_for_sources(node& n, const std::string& path, std::function<void(bool)> done);
  void end_write(const attempt& a, ending e, const streams::outcome* out);
  void end_read(const attempt& a, node& n, bool ok, bool lost);
  bool read_stream(const streams::state_machine& sm, int stream, std::string& out) const;
  void schedule_chaos();
  void chaos_step();
  bool is_quiet() const;
  void probe_quiet();

  // Lost fork releases (cluster_sim_releases.cc).
  static std::uint32_t group_of_path(std::string_view path, int groups);
  void start_sweep(node& n);
  void arm_sweep(node& n);
  void run_script(std::shared_ptr<std::vector<streams::command>> script, std::size_t i);
  void propose_side(node& n, const streams::command& c, std::function<void(const streams::outcome*)> done);
  void release_phase();
  bool releases_settled(std::string& why) const;

  // The checks at the end of a run (cluster_sim_checks.cc).
  void check_final();
  bool check_forks(const std::vector<std::string>& finals);
  void check_reads(const std::vector<std::map<std::uint64_t, std::size_t>>& pos,
                   const std::vector<std::string>& finals);

  sim_report run();
};

}  // namespace weir::cluster::sim
