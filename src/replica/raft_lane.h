// raft_lane: a partition's commit path on a node of a cluster (docs/replication.md). Every command goes
// through the raft group its stream's path hashes to (cluster::replicator) and is applied to the
// partition's state machine only once committed, on every node, in log order (apply_committed); the
// client's answer comes from this node's own apply of its command. Reads first wait for a read index
// (linearizable on every node). The lane also takes and restores the group snapshots of its groups
// (records the data log holds durably as references, the others inline; their chunked transfer to a
// peer), links forks to their sources' logs as their creates are applied, and runs the fork sweep of the
// source groups it leads.
//
// Lanes (docs/replication.md, "Lanes"): a node of L lanes has L partitions, each with a raft lane of its
// own that runs the groups g with g % L == its lane (its own node log, data log and links); lane 0 holds
// group 0, decides the membership and carries the subscriptions' groups. What crosses lanes (a fork's
// read waiting for its source's group, a source's log lent to a fork on another lane, the fork sweep's
// questions) goes by tasks posted through the host (lane_host::post_to_lane).
//
// Built from what it runs on, not from a node: an executor (raft::executor), the links to the other
// nodes (cluster::links), a log_flusher for the node log, an env, and its host. The server wires it to an
// event loop, TCP peer links and a flusher thread (server/replication); the cluster simulation to its
// scheduler, the in-memory network and mem_env (tests/unit/cluster).
//
// Lives on its executor: every method runs there unless it says otherwise; every callback runs there.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/result.h"
#include "cluster/applied_waits.h"
#include "cluster/cluster_options.h"
#include "cluster/links.h"
#include "cluster/replicator.h"
#include "raft/executor.h"
#include "raft/node_log.h"
#include "replica/cold_mover.h"
#include "replica/commit_path.h"
#include "replica/partition.h"
#include "replica/shard_wal.h"
#include "storage/env.h"
#include "streams/command.h"
#include "streams/fork_sweep.h"
#include "streams/state_machine.h"
#include "tier/cold_reader.h"

namespace weir::replica {

class snapshot_transfers;
struct snapshot_transfer_stats;

// The raft group of a stream's path (or a subscription's key) in a cluster of `groups` groups: a salted
// FNV-1a, stable across runs and the same on every node.
std::uint32_t cluster_group_of(std::string_view path, std::uint32_t groups);

// What a cluster node's subscription service takes from the raft groups (server/subscription_host.cc
// implements it over subscriptions::service). Called on lane 0's executor (core 0, the service's home).
class subscription_entries {
 public:
  virtual ~subscription_entries() = default;
  // A committed entry of kind `subscriptions` (every node, in the group's log order).
  virtual void apply(std::uint32_t group, std::span<const std::byte> payload) = 0;
  // A leader call for `group` (replicator::callbacks::serve).
  virtual void serve(std::uint32_t group, std::span<const std::byte> request,
                     std::function<void(std::optional<std::vector<std::byte>>)> reply) = 0;
  // Group snapshots (docs/replication.md, "Snapshots"): the part of the subscriptions `group`'s entries
  // made, and its restore (a damaged part changes nothing).
  virtual std::vector<std::byte> snapshot_part(std::uint32_t group) const = 0;
  virtual status restore_part(std::uint32_t group, std::span<const std::byte> part) = 0;
};

// What a raft lane needs from the node it runs in. Called on the lane's executor.
class lane_host {
 public:
  virtual ~lane_host() = default;
  // Runs `fn` on lane `lane`'s executor, later (never inside this call). Called from any lane.
  virtual void post_to_lane(std::uint32_t lane, std::function<void()> fn) = 0;
  // A committed command was applied here with outcome `o`: carry out its effects (wake live readers,
  // report stream events) and, when `releases` (this node proposed it, in this run), its fork releases.
  virtual void on_applied(const streams::outcome& o, bool releases) = 0;
  // A group snapshot replaced the part of the state `in_part` accepts; `removed`: the streams it
  // removed. Live readers of the part look again.
  virtual void on_restored(const streams::state_machine::path_predicate& in_part,
                           const std::vector<std::string>& removed) = 0;
  // Proposals in flight went down (inside libraft's apply: propose nothing from here).
  virtual void on_in_flight_down() = 0;
  // The raft node log failed: the node stops rather than limp on (docs/replication.md).
  virtual void fail(const std::string& why) = 0;
};

struct raft_lane_options {
  cluster::cluster_options cluster;   // node id, peers, groups, lanes, timeouts, snapshots, join
  std::uint32_t lane = 0;             // which of cluster.lanes this one runs
  std::string data_dir;               // the node log: <data_dir>/raft/node.log (lane l: raft/lane-<l>/)
  bool prepare_log_segments = false;  // raft::node_log_options::prepare_segments
  // The fork sweep (streams/fork_sweep.h): a pass this often over the fork references of the source
  // groups this lane leads (0: none), of references whose retain is older than the min age.
  std::int64_t fork_sweep_ms = 30'000;
  // How often node-log segments kept for their records are looked at, and deleted once nothing
  // references them (raft_lane_places.cc); 0: never.
  std::int64_t kept_drop_ms = 10'000;
  std::int64_t fork_sweep_min_age_ms = 120'000;
  // Snapshot transfer ids of this run start here (0: a random start, so that they differ from an earlier
  // run's, which a receiver may still hold; the simulation picks its own to replay).
  std::uint64_t first_transfer_id = 0;
  // Reads the records a snapshot sent to a peer references, off the executor (the server: a thread of
  // its own); `done` runs on this lane's executor. Null: the partition's read_slices.
  std::function<void(streams::read_plan, tier::cold_reader::completion)> read_slices;
  // Last word on the replicator's options (the simulation: its timeouts, its id seed, its log path).
  std::function<void(cluster::replicator::options&)> adjust;
};

class raft_lane final : public commit_path, public cold_groups {
 public:
  // Opens the node log and starts every group of the lane. `flusher`: where the node log's disk work
  // runs; `links` outlive the lane.
  static result<std::unique_ptr<raft_lane>> open(partition& part, raft::executor& ex,
                                                 std::unique_ptr<raft::log_flusher> flusher,
                                                 cluster::links& links, storage::env& env, lane_host& host,
                                                 raft_lane_options o);
  ~raft_lane() override;
  raft_lane(const raft_lane&) = delete;
  raft_lane& operator=(const raft_lane&) = delete;

  // Lanes, wired before the executors run: every lane's raft lane, lane 0 first (this one included).
  // The replicators follow lane 0 (cluster::replicator::connect_lanes).
  static void connect_lanes(const std::vector<raft_lane*>& lanes);

  // commit_path. submit proposes `c` in its stream's group; `done` runs once this node applied it (with
  // the outcome of that apply) or once it failed (durable_result::failure: cluster_unavailable or
  // cluster_outcome_unknown). Returns an empty outcome: nothing is applied before it is committed.
  streams::outcome submit(const streams::command& c, completion done) override;
  std::size_t in_flight() const override { return waiting_.size(); }
  std::size_t in_flight_bytes() const override { return in_flight_bytes_; }
  // A read index (expiries are the leader's, not the reader's).
  void linearize(const std::string& path, std::int64_t, std::function<void(bool)> ready) override {
    linearize(std::string_view(path), std::move(ready));
  }
  // linearize, then a sliding TTL's renewal through raft before the read is served.
  void prepare_read(const std::string& path, std::int64_t now_ms,
                    std::function<void(errc, streams::errc)> ready) override;
  bool leads(const std::string& path) const override { return repl_->leads(group_of(path)); }
  bool left() const override { return repl_->left(); }  // removed from the cluster
  bool names_forks() const override { return true; }
  bool same_log(std::string_view a, std::string_view b) const override { return group_of(a) == group_of(b); }

  // `ready(true)` once this node applied every command committed in `path`'s group before the call and,
  // when `path` is a fork, its source's group through the fork's retain (and so on up a chain of forks:
  // wait_for_sources). `ready(false)`: no read index, or a source's group stayed behind for the read
  // timeout (the read gets 503).
  void linearize(std::string_view path, std::function<void(bool)> ready);
  void linearize_group(std::uint32_t group, std::function<void(bool)> ready) {
    repl_->read_index(group, std::move(ready));
  }
  std::uint32_t lane() const { return opts_.lane; }
  // Subscriptions are replicated through lane 0's groups (the service lives on core 0): the group of
  // lane 0 a subscription's key belongs to (group_of when the node has one lane).
  std::uint32_t subscription_group_of(std::string_view key) const;
  // Before the executor runs: where entries of kind `subscriptions` and leader calls go (until then, and
  // with nullptr, they are dropped / refused).
  void attach_subscriptions(subscription_entries* s) { subscriptions_ = s; }
  // Proposes a subscription entry in `group` (cluster::replicator::submit, `here_only` as there); `done`
  // runs on this executor: true once this node applied it, false when it failed.
  void submit_entry(std::uint32_t group, std::span<const std::byte> payload, bool here_only,
                    std::function<void(bool)> done);

  // cold_groups (replica/cold_mover.h): the cold tier's uploads of this lane's groups go from their
  // leaders, and an index record is an entry of kind cold_index proposed only while this node leads the
  // group (here_only), applied on every node in log order (partition::apply_index_entry).
  std::vector<std::uint32_t> groups() const override;
  std::uint32_t group_of(std::string_view path) const override {
    return cluster_group_of(path, opts_.cluster.groups);
  }
  std::optional<std::uint64_t> leader_term(std::uint32_t group) const override {
    return repl_->leader_term(group);
  }
  void record(std::uint32_t group, std::vector<std::byte> record, recorded done) override;
  void settle(std::uint32_t group, std::function<void(bool)> ready) override {
    linearize_group(group, std::move(ready));
  }

  // The cold tier's restore snapshots (replica/cluster_cold_snapshots.h): `group`'s state as this node
  // applied it, at the index it applied last, in the leader's term: its streams (records on disk as
  // references to the data log, whose segments stay pinned until release_bucket_cut), its subscriptions
  // and its part of the cold index. An error when this node does not lead the group.
  struct bucket_cut {
    std::uint64_t index = 0;
    std::uint64_t term = 0;
    std::vector<std::byte> streams;
    std::vector<std::byte> subscriptions;
    std::vector<std::byte> cold;
    std::vector<std::string> object_keys;  // the objects `cold` names
  };
  result<bucket_cut> cut_for_bucket(std::uint32_t group);
  void release_bucket_cut(std::uint32_t group);
  // The last entry of `group` this node applied (configuration and leader entries included: the state
  // is the same after them as after the last command before them).
  std::uint64_t applied_index(std::uint32_t group) const { return repl_->applied_index(group); }

  // A committed command of the cluster, at `index` of `group`'s log, applied to the state machine (what
  // a stream it creates is called and the place of a fork reference it takes: set_entry_place; the same
  // on all nodes), its effects told to the host. The record it adds points at `stored` (its bytes in the
  // node log, synced: node_log_place) or, without one, is written to the data log. The node that
  // proposed it (`proposed_here`: its answer waits here) alone proposes the fork releases it causes
  // (lane_host::on_applied); a release lost on the way is recovered by the fork sweep of the source's
  // group's leader.
  streams::outcome apply_committed(const streams::command& c, std::uint32_t group, std::uint64_t index,
                                   bool proposed_here, const streams::disk_location* stored = nullptr);

  // The core number of places in this lane's node log (disk_location::core): the node's readers hold
  // the lanes' data logs at 0..lanes-1 and their node logs at lanes..2*lanes-1 (open_readers).
  static std::uint32_t node_log_core(std::uint32_t lane, std::uint32_t lanes) { return lanes + lane; }
  // Where lane `lane` keeps its node log under a node's data directory.
  static std::string raft_dir(const std::string& data_dir, std::uint32_t lane);
  // A reader of lane `lane`'s node log (raft::node_log_framing), at index node_log_core of the readers
  // every partition of the node is given beside the data logs' readers.
  static std::unique_ptr<storage::segment_reader> node_log_reader(storage::env& e,
                                                                  const std::string& data_dir,
                                                                  std::uint32_t lane);

  // The fork sweep's timer (start) and the lane's end (stop: the timer cancelled, nothing proposed for
  // the sweep after it). Call stop before the lane is destroyed.
  void start();
  void stop();

  // What the node shows of the lane (/cluster, /metrics).
  cluster::replicator& replicator() { return *repl_; }
  const cluster::replicator& replicator() const { return *repl_; }
  const snapshot_transfer_stats& transfer_stats() const;
  streams::fork_sweep::counters fork_sweep_counts() const {
    return fork_sweep_ ? fork_sweep_->stats() : streams::fork_sweep::counters{};
  }
  partition& part() { return part_; }
  const partition& part() const { return part_; }
  // Node-log segments kept for the records in them (raft_lane_places.cc): now, and deleted so far.
  struct kept_figures {
    std::size_t segments = 0;
    std::uint64_t bytes = 0;
    std::uint64_t dropped = 0;
  };
  kept_figures kept() const;

 private:
  raft_lane(partition& part, raft::executor& ex, cluster::links& links, lane_host& host, raft_lane_options o);
  void apply(std::uint32_t group, std::uint64_t index, cluster::entry_kind kind,
             std::span<const std::byte> command, std::uint64_t ticket, const cluster::command_place* place);
  void failed(std::uint64_t ticket, cluster::submit_error e);
  // Forks across groups (docs/replication.md, "Forks"): groups apply independently, so a fork's create
  // may be applied here before its source's group applied the source's data up to the fork point. A
  // read of `path` (a stream of this lane) waits until the group of each source up its fork chain
  // applied the retain its fork recorded (fork_resolution::origin; forks without one wait for nothing):
  // each link on the lane of the source's group, whose answer comes back the way it went (so that the
  // fork's link to its source's log, lent by that lane, arrives first: lend_log).
  void wait_for_sources(std::string path, std::function<void(bool)> ready);
  // The lane running `group` (this one with one lane); the lane index of a stream's path.
  raft_lane& lane_of_group(std::uint32_t group) { return *lanes_[group % lanes_.size()]; }
  std::uint32_t lane_index_of(std::string_view path) const { return group_of(path) % opts_.cluster.lanes; }
  // Runs `fn` on `r`'s executor: at once when that is this lane, else posted.
  void on_lane(raft_lane& r, std::function<void()> fn);
  // Group snapshots (cluster::replicator::callbacks; replica/group_snapshot.h): the group's part of the
  // streams and of the subscriptions; and its restore. A snapshot goes to a peer through transfers_ (its
  // referenced records in chunks first, replica/snapshot_transfer.h).
  result<std::vector<std::byte>> take_snapshot(std::uint32_t group, std::uint64_t index);
  status restore_snapshot(std::uint32_t group, std::uint64_t index, std::span<const std::byte> state);
  // The streams' part of a restore: the state replaced, the host told, records restored inline written to
  // the data log, forks of the part linked across lanes. A damaged blob changes nothing.
  status restore_part(std::span<const std::byte> blob, const streams::state_machine::path_predicate& in_part);
  void open_snapshot_transfers();
  streams::state_machine::path_predicate in_group(std::uint32_t group) const;

  // Lanes: a fork whose source lives on another lane's partition gets its source's log from that lane.
  // On the fork's lane: asks for it.
  void ask_for_source(const std::string& fork, const std::string& source);
  // On the source's lane: hands `source`'s log to `to` for its fork `fork` once the source exists here
  // and is linked all the way up its own fork chain (a log lent to another executor is never linked
  // later on this one); until then the request waits (lend_waiting_).
  void lend_log(const std::string& source, raft_lane* to, const std::string& fork);
  void answer_lend_requests();
  // On the fork's lane: links `fork` to the lent log if it still waits for it.
  void take_lent_log(const std::string& fork, const std::string& source,
                     std::shared_ptr<const streams::memory_log> log);
  // Links the forks applied before their source `source` was created here.
  void link_waiting_forks(const std::string& source);
  void open_fork_sweep();
  void arm_fork_sweep();

  partition& part_;
  raft::executor& ex_;
  cluster::links& links_;
  lane_host& host_;
  raft_lane_options opts_;
  std::vector<raft_lane*> lanes_{this};              // every lane's, lane 0 first (connect_lanes)
  std::unique_ptr<cluster::applied_waits> applied_;  // how far each group applied here (fork reads wait)
  std::unique_ptr<cluster::replicator> repl_;
  std::unique_ptr<snapshot_transfers> transfers_;  // destroyed after repl_ (node_io calls it)
  struct waiter {
    completion done;
    std::function<void(bool)> entry_done;  // submit_entry's
    recorded record_done;                  // record's
    std::size_t bytes = 0;
  };
  using waiter_map = std::unordered_map<std::uint64_t, waiter>;
  // Proposes an entry of `kind` in `group` (replicator::submit) and waits for it with `w`.
  void propose(std::uint32_t group, std::span<const std::byte> payload, cluster::entry_kind kind,
               bool here_only, waiter w);
  // Runs the command's completion on the next turn and forgets it (an index record's gets `applied`, or
  // the failure in `r` as an error).
  void finish(waiter_map::iterator it, durable_result r,
              std::optional<result<tier::cold_apply_result>> applied = std::nullopt);
  waiter_map waiting_;
  subscription_entries* subscriptions_ = nullptr;
  std::size_t in_flight_bytes_ = 0;
  std::string scratch_;
  // Forks applied before their source (source path -> fork path), until it is created.
  std::unordered_multimap<std::string, std::string> unlinked_forks_;
  // Requests for a source's log that wait for it here (source path -> asking lane, fork path).
  std::unordered_multimap<std::string, std::pair<raft_lane*, std::string>> lend_waiting_;
  std::unique_ptr<streams::fork_sweep> fork_sweep_;
  raft::executor::timer_id fork_sweep_timer_ = 0;
  bool stopped_ = false;

  // Records in the node log (raft_lane_places.cc; docs/replication.md, "Stream data on a cluster
  // node"). A place's segment outlives the raft entries in it while the state or a snapshot references
  // it: compaction keeps it (node_log::set_keep) and drop_kept deletes it once nothing does.
  using place_set = std::set<std::pair<std::uint32_t, std::uint64_t>>;  // (core, segment)
  std::uint32_t node_core() const { return *part_.node_log_core(); }    // set by open()
  void open_node_log_places();
  bool keep_log_segment(std::uint32_t segment);
  bool places_open_ = false;  // open() returned: the state the snapshots restored is in place
  // The segments of the places a snapshot of group `key` references stay until its next one: the data
  // log's through the partition, the node log's here.
  void pin_places(std::uint32_t key, const place_set& places);
  // The node-log segments the state or a snapshot references.
  std::set<std::uint64_t> node_log_segments_needed() const;
  void arm_kept_drop();
  void drop_kept();
  std::map<std::uint32_t, std::vector<std::uint64_t>> node_log_pins_;
  // node_log_segments_needed(), until a reference may be added (apply_committed with a place, a
  // restore, a pin): compaction asks segment by segment.
  std::optional<std::set<std::uint64_t>> needed_;
  raft::executor::timer_id kept_timer_ = 0;
  bool dropping_kept_ = false;
  std::uint64_t kept_dropped_ = 0;
};

}  // namespace weir::replica
