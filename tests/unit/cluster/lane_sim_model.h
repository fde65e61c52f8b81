// lane_sim_model: the lane simulation's state and steps (one run), private to the simulation's library:
// lane_sim.cc runs it (nodes, faults, the recovery), lane_sim_clients.cc holds the clients' workload,
// lane_sim_checks.cc the checks made at the end of a run, lane_sim_releases.cc the lost fork releases
// phase and lane_sim_cold.cc the cold tier (lane_sim.h lists the checks). Single-threaded, on the scheduler's
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/clock.h"
#include "replica/partition.h"
#include "replica/raft_lane.h"
#include "storage/mem_env.h"
#include "storage/segment_reader.h"
#include "streams/command.h"
#include "support/sim/mem_network.h"
#include "support/sim/sim_disk_worker.h"
#include "support/sim/sim_faults.h"
#include "support/sim/sim_scheduler.h"
#include "tier/cold_fetcher.h"
#include "tier/mem_object_store.h"
#include "unit/cluster/lane_sim.h"
#include "unit/cluster/mem_links.h"

namespace weir::cluster::sim {

class lane_sim;

enum class op_kind : std::uint8_t { create, plain, producer, read, fork };
enum class ending : std::uint8_t { answered, unknown, no_leader, node_lost };

// One client request; a producer append, a create or a fork is sent again (same op, same command) until
// answered.
struct op {
  std::uint64_t id = 0;
  op_kind kind = op_kind::read;
  int client = 0;
  int stream = 0;
  streams::command command;     // writes
  std::uint64_t start_seq = 0;  // event order of the first attempt
  std::int64_t start_ms = 0;
  std::uint64_t ack_seq = 0;  // 0: never acknowledged
  std::int64_t ack_ms = -1;
  bool no_leader = false;  // an attempt failed with cluster_unavailable
  int attempts = 0;
  int stage = 0;  // a fork: 0 while its retain is sent, 1 once its create is (`command` then holds it)
};

// One attempt of an op on one node.
struct attempt {
  std::uint64_t op = 0;
  std::uint64_t epoch = 0;  // the cluster's connectivity epoch when it started
  bool minority = false;    // its node could not reach a majority then
  std::uint64_t start_seq = 0;
};

// A served read: what the node's partition held.
struct read_record {
  std::uint64_t op = 0;
  int stream = 0;
  std::uint64_t node = 0;
  std::uint64_t start_seq = 0, end_seq = 0;
  std::int64_t start_ms = 0, end_ms = 0;
  bool exists = false;
  std::string content;
};

// What a node holds of a stream at the end.
struct final_read {
  bool exists = false;
  std::string content;
  std::uint64_t generation = 0;
  std::uint64_t tail = 0;
};

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
  std::unique_ptr<tier::cold_fetcher> fetcher;  // the cold tier's reads of the bucket (its block cache)
  std::uint32_t groups = 1;
  // Client attempts waiting for their answer here (serial -> attempt).
  std::map<std::uint64_t, attempt> waiting;
  // Proposals that are no client's (the release phase's script and releases): serial -> what gets this
  // node's outcome (nullptr: failed, or the node went down).
  std::map<std::uint64_t, std::function<void(const streams::outcome*)>> side;
  std::uint64_t next_serial = 1;

  // The lane of a stream: its group's (group g runs on lane g % lanes).
  std::size_t lane_of(std::string_view path) const {
    return replica::cluster_group_of(path, groups) % lanes.size();
  }
  replica::raft_lane& lane(std::string_view path) { return *lanes[lane_of(path)]; }
  replica::partition& part(std::string_view path) { return *parts[lane_of(path)]; }
  // Every lane's groups, in group order.
  std::vector<replicator::group_status> status() const;

  void on_durable(const streams::outcome&) override {}
  void on_rebuilt() override {}
  void on_writes_resumed() override {}
  void post_to_lane(std::uint32_t, std::function<void()> fn) override { ex->post(std::move(fn)); }
  void on_applied(const streams::outcome& o, bool releases) override;
  void on_restored(const streams::state_machine::path_predicate&, const std::vector<std::string>&) override {}
  void on_in_flight_down() override {}
  void fail(const std::string& why) override;
};

struct sim_client {
  int id = 0;
  int home = 0;  // the stream its producer writes to
  std::string producer_id;
  std::uint64_t epoch = 0;
  std::uint64_t next_seq = 0;
  std::uint64_t again = 0;  // an op to send again until it is answered (producer append, create, fork)
  std::vector<std::uint64_t> producer_ops;  // in the order they were made
  bool busy = false;
  int final_ops = 0;  // recovery phase: one append, one read, then done
  bool done = false;
  int read_next = -1;  // a fork it just created: its next op reads it (on a random node)
};

// The partitions' clock: the scheduler's time, from a wall-clock start (TTLs and the fork sweep's
// retain ages move with the simulated time).
class sim_clock final : public clock_source {
 public:
  explicit sim_clock(const raft::sim_scheduler& s) : s_(s) {}
  std::int64_t wall_ms() const override { return 1'700'000'000'000 + s_.now_ms(); }
  std::int64_t mono_ms() const override { return s_.now_ms(); }

 private:
  const raft::sim_scheduler& s_;
};

class lane_sim {
 public:
  explicit lane_sim(const lane_sim_options& o) : o_(o), sched_(o.seed) {
    for (int l = 0; l < o.lanes; ++l) nets_.push_back(std::make_unique<raft::mem_network>(sched_));
  }

  lane_sim_report run();
  void node_failed(sim_node& n, const std::string& why);
  void node_applied(sim_node& n, const streams::outcome& o, bool releases);

 private:
  template <class... Args>
  void note(fmt::format_string<Args...> f, Args&&... args) {
    raft::sim_trace(o_.verbose, sched_, f, std::forward<Args>(args)...);
  }
  void fail(const std::string& what) { raft::sim_fail(report_, o_.seed, sched_, what); }
  static std::string path_of(int s) { return fmt::format("/s{}", s); }
  int all_streams() const { return o_.streams + o_.forks; }
  bool is_fork(int stream) const { return stream >= o_.streams; }
  // The last fork (of several) is a fork of the first: reads of it wait along the chain.
  int source_of(int fork) const {
    if (o_.forks >= 2 && fork == all_streams() - 1) return o_.streams;
    return (fork - o_.streams + 1) % o_.streams;
  }
  void each_net(const std::function<void(raft::mem_network&)>& fn) {
    for (auto& w : nets_) fn(*w);
  }
  bool reaches_majority(const sim_node& n) const;

  // Nodes and faults (lane_sim.cc).
  void start_node(sim_node& n);
  void stop_node(sim_node& n, bool power_loss);
  void end_process(sim_node& n);
  void restart_later(sim_node& n, std::int64_t lo, std::int64_t hi);
  void tick(sim_node& n, int incarnation);
  void schedule_faults();
  void fault_step();
  bool is_quiet() const;

  // Clients (lane_sim_clients.cc).
  op& new_op(sim_client& c, op_kind kind, int stream);
  void schedule_client(sim_client& c, std::int64_t lo, std::int64_t hi);
  void client_step(sim_client& c);
  void start_attempt(sim_client& c, op& p, sim_node& n);
  void end_write(const attempt& a, ending e, const streams::outcome* out);
  void end_read(const attempt& a, sim_node& n, ending e, final_read* got = nullptr);
  // The whole stream as `n`'s partition serves it (records that left memory come from its data log, bytes
  // only in the bucket from there: partition::read_cold). `done` runs on `n`'s executor, maybe later (never
  // if the node goes down first), with false when the bucket could not give the bytes (a store fault).
  using read_fn = std::function<void(bool, final_read&)>;
  void read_stream(sim_node& n, int stream, read_fn done);
  struct stream_read;
  void read_more(sim_node& n, std::shared_ptr<stream_read> r);

  // The checks at the end (lane_sim_checks.cc).
  void final_reads();
  void check_final();
  bool check_forks(const std::vector<std::string>& finals);
  void check_reads(const std::vector<std::map<std::uint64_t, std::size_t>>& pos,
                   const std::vector<std::string>& finals);

  // The cold tier (lane_sim_cold.cc): a node's partitions get theirs as the server gives them
  // (node::open_cold, a cluster node), once their raft lanes are open; the counts of a process that ends;
  // the checks at the end (lane_sim.h, invariant 8).
  void attach_cold(sim_node& n);
  void count_cold(sim_node& n);
  void check_cold();

  // Lost fork releases (lane_sim_releases.cc).
  void propose_side(sim_node& n, const streams::command& c,
                    std::function<void(const streams::outcome*)> done);
  void propose_release(sim_node& n, const streams::fork_release_command& r);
  void run_script(std::shared_ptr<std::vector<streams::command>> script, std::size_t i);
  bool releases_settled(std::string& why);
  void release_phase();

  lane_sim_options o_;
  raft::sim_scheduler sched_;
  std::vector<std::unique_ptr<raft::mem_network>> nets_;  // by lane
  sim_clock clock_{sched_};
  std::vector<std::unique_ptr<sim_node>> nodes_;
  std::vector<sim_client> clients_;
  std::deque<op> ops_;                      // by id (ops_[0] unused)
  std::vector<bool> ready_;                 // per stream: its create was acknowledged
  std::vector<bool> forking_;               // per fork: a client makes it (only one ever does)
  std::vector<std::uint64_t> created_seq_;  // per stream: event order of the first acknowledged create
  std::vector<read_record> reads_;
  // What each node read of each stream once it applied everything committed (final_reads).
  std::vector<std::vector<std::optional<final_read>>> finals_;
  std::uint64_t events_ = 0;  // a logical clock ordering starts, answers and reads exactly
  std::uint64_t epoch_ = 0;   // bumped by every change of who can reach whom
  bool recovering_ = false;
  bool finished_ = false;
  // The release phase: releases are lost as lane_sim.h says (invariant 7).
  bool releasing_ = false;
  bool killed_for_release_ = false;
  bool script_done_ = false;
  // The cold tier's bucket, shared by every node (as an S3 bucket is), and the reader the checks use.
  std::unique_ptr<tier::mem_object_store> store_;
  std::unique_ptr<tier::cold_fetcher> fetcher_;
  lane_sim_report report_;
};

}  // namespace weir::cluster::sim
