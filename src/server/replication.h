// replication: a stream_shard's writes and reads when the node is one node of a cluster
// (docs/replication.md). Every command goes through the raft group its stream's path hashes to
// (cluster::replicator) and is applied to the shard's state machine only once committed, on every
// node, in log order; the client's answer comes from this node's own apply of its command. Reads first
// wait for a read index (linearizable on every node).
//
// Lanes (docs/replication.md, "Lanes"): a node of L lanes has L shards, each with a replication of its
// own that runs the groups g with g % L == its lane (its own node log, data log and peer links); lane 0
// holds group 0, decides the membership and carries the subscriptions' groups. What crosses lanes (a
// fork's read waiting for its source's group) goes by posted tasks between the lanes' loops.
// Lives on the shard's loop; every method runs there unless it says otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/result.h"
#include "cluster/applied_waits.h"
#include "cluster/cluster_options.h"
#include "cluster/peer_links.h"
#include "cluster/replicator.h"
#include "raft/loop_executor.h"
#include "raft/thread_flusher.h"
#include "replica/commit_path.h"
#include "replica/shard_wal.h"
#include "storage/env.h"
#include "streams/command.h"

namespace weir::server {

class stream_shard;
}  // namespace weir::server
namespace weir::tier {
class cold_reader;
}  // namespace weir::tier
namespace weir::server {}  // namespace weir::server
namespace weir::replica {
class snapshot_transfers;
}  // namespace weir::replica
namespace weir::server {

// What a cluster node's subscription service takes from the raft groups (subscription_host.cc implements
// it over subscriptions::service). Called on the replication's loop (core 0, the service's home).
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

// The raft group of a stream's path (or a subscription's key) in a cluster of `groups` groups: a salted
// FNV-1a, stable across runs and the same on every node.
std::uint32_t cluster_group_of(std::string_view path, std::uint32_t groups);

// A raft lane as its partition's commit path (replica/commit_path.h).
class replication final : public replica::commit_path {
 public:
  // Opens the peer links and the node log under `data_dir`/raft and starts every group.
  // prepare_log_segments: raft::node_log_options::prepare_segments (the server's prepare-segments with
  // fsync always).
  // `lane`: which of o.lanes this one runs (lane 0: the node log raft/node.log; lane l:
  // raft/lane-<l>/node.log).
  static result<std::unique_ptr<replication>> open(stream_shard& shard, storage::env& env,
                                                   const std::string& data_dir,
                                                   const cluster::cluster_options& o,
                                                   bool prepare_log_segments = false, std::uint32_t lane = 0);
  ~replication() override;

  // Proposes `c` in its stream's group; `done` runs on this loop once this node applied it (with the
  // outcome of that apply) or once it failed (durable_result::failure: cluster_unavailable). Returns an
  // empty outcome: nothing is applied before the command is committed.
  streams::outcome submit(const streams::command& c, completion done) override;
  // commit_path::linearize (a read index; expiries are the leader's, not the reader's) and prepare_read
  // (linearize, then a sliding TTL's renewal through raft before the read is served).
  void linearize(const std::string& path, std::int64_t, std::function<void(bool)> ready) override {
    linearize(std::string_view(path), std::move(ready));
  }
  void prepare_read(const std::string& path, std::int64_t now_ms,
                    std::function<void(replica::errc, streams::errc)> ready) override;
  bool names_forks() const override { return true; }
  // `ready(true)` once this node applied every command committed in `path`'s group before the call and,
  // when `path` is a fork, its source's group through the fork's retain (and so on up a chain of forks:
  // wait_for_sources). `ready(false)`: no read index, or a source's group stayed behind for the read
  // timeout (the read gets 503).
  void linearize(std::string_view path, std::function<void(bool)> ready);
  void linearize_group(std::uint32_t group, std::function<void(bool)> ready);
  std::uint32_t group_of(std::string_view path) const;
  std::uint32_t lane() const { return lane_; }
  // Subscriptions are replicated through lane 0's groups (the service lives on core 0): the group of
  // lane 0 a subscription's key belongs to (group_of when the node has one lane).
  std::uint32_t subscription_group_of(std::string_view key) const;

  // Lanes, wired by the node before the loops run: every lane's replication, lane 0 first (this one
  // included); lane 0's peer links hand the connections of the other lanes to `handoff`; the others
  // adopt them (adopt_peer, on their loop). The replicators follow lane 0 (cluster::replicator::
  // connect_lanes).
  static void connect_lanes(const std::vector<replication*>& lanes);
  void set_peer_handoff(cluster::peer_links::handoff h) { links_->set_handoff(std::move(h)); }
  void adopt_peer(std::unique_ptr<cluster::peer_links::handed_conn> c) { links_->adopt(std::move(c)); }
  stream_shard& shard() { return shard_; }
  // Subscriptions (docs/subscriptions.md, "Cluster"). Before the loop runs: where entries of kind
  // `subscriptions` and leader calls go (until then, and with nullptr, they are dropped / refused).
  void attach_subscriptions(subscription_entries* s) { subscriptions_ = s; }
  // Proposes a subscription entry in `group` (cluster::replicator::submit, `here_only` as there); `done`
  // runs on this loop: true once this node applied it, false when it failed.
  void submit_entry(std::uint32_t group, std::span<const std::byte> payload, bool here_only,
                    std::function<void(bool)> done);
  // cluster::replicator::call_leader.
  void call_leader(std::uint32_t group, std::vector<std::byte> request,
                   std::function<void(result<std::vector<std::byte>>)> done) {
    repl_->call_leader(group, std::move(request), std::move(done));
  }
  std::uint64_t node_id() const { return opts_.node_id; }
  // SIGHUP: re-reads the peer-tls files for new peer connections (peer_links::reload_tls); any thread.
  status reload_peer_tls() { return links_->reload_tls(opts_); }
  bool leads_group(std::uint32_t group) const { return repl_->leads(group); }
  // Every group of the cluster, indexed by group: whether this node leads it, and its term (this lane's
  // groups only; the others' as not led, term 0).
  std::vector<std::pair<bool, std::uint64_t>> group_views() const;
  // Commands this node proposed that are not applied or failed yet, and their encoded bytes (the
  // shard refuses writes beyond max-in-flight, as it does for its log when alone).
  std::size_t in_flight() const override { return waiting_.size(); }
  std::size_t in_flight_bytes() const override { return in_flight_bytes_; }
  bool leads(const std::string& path) const override { return repl_->leads(group_of(path)); }
  bool has_quorum() const { return repl_->has_quorum(); }
  bool left() const override {
    return repl_->left();
  }  // removed from the cluster (cluster::replicator::left)
  // Elections and leadership changes of this node's groups (GET /metrics: weir_raft_*).
  const cluster::leadership_counts& leadership() const { return repl_->leadership(); }
  // This node's view, as JSON: groups (with their configurations), leaders, terms, indexes, peer links,
  // the desired membership.
  // A node of several lanes: lane 0's view with the others' (`others`, each rendered on its own loop
  // by status_part): every lane's groups in raft_groups, groups_led and quorum of all lanes, and each
  // other lane's own view in other_lanes.
  struct lane_status {
    std::vector<std::pair<std::uint32_t, std::string>> groups;  // raft_groups entries: group, JSON object
    std::uint64_t led = 0;
    bool quorum = true;
    std::string whole;  // the lane's status_json()
  };
  std::string status_json(const std::vector<lane_status>& others = {}) const;
  lane_status status_part() const;
  // POST and DELETE /cluster/members (docs/operations.md, "Cluster"): `done` gets the membership the
  // change made, as JSON, once group 0 decided it and this node applied it, or cluster::membership_errc;
  // called later, on this loop.
  using membership_done = std::function<void(result<std::string>)>;
  void add_member(std::uint64_t id, std::string_view address, membership_done done);
  void remove_member(std::uint64_t id, membership_done done);
  // GET /cluster/members.
  std::string membership_json() const;

 private:
  replication(stream_shard& shard, cluster::cluster_options o);
  void apply(std::uint32_t group, std::uint64_t index, cluster::entry_kind kind,
             std::span<const std::byte> command, std::uint64_t ticket);
  void failed(std::uint64_t ticket, cluster::submit_error e);
  // Forks across groups (docs/replication.md, "Forks"): groups apply independently, so a fork's create
  // may be applied here before its source's group applied the source's data up to the fork point. A
  // read of `path` (a stream of this lane) waits until the group of each source up its fork chain
  // applied the retain its fork recorded (fork_resolution::origin; forks without one wait for nothing):
  // each link on the lane of the source's group, whose answer comes back the way it went (so that the
  // fork's link to its source's log, lent by that lane, arrives first: stream_shard::lend_log).
  // `ready` runs on this loop.
  void wait_for_sources(std::string path, std::function<void(bool)> ready);
  // The lane running `group` (this one with one lane).
  replication& lane_of_group(std::uint32_t group) { return *lanes_[group % lanes_.size()]; }
  // Runs `fn` on `r`'s loop: at once when that is this lane, else posted.
  void on_lane(replication& r, std::function<void()> fn);
  // Group snapshots (cluster::replicator::callbacks; server/group_snapshot.h): the group's part of the
  // streams (records the data log holds durably as references, the others inline) and of the
  // subscriptions; and its restore. A snapshot goes to a peer through transfers_ (its referenced records
  // in chunks first, server/snapshot_transfer.h).
  result<std::vector<std::byte>> take_snapshot(std::uint32_t group, std::uint64_t index);
  status restore_snapshot(std::uint32_t group, std::uint64_t index, std::span<const std::byte> state);
  // Wires transfers_ to the node: node_io, the data log, a reader thread.
  void open_snapshot_transfers();
  streams::state_machine::path_predicate in_group(std::uint32_t group) const;

  stream_shard& shard_;
  cluster::cluster_options opts_;
  std::uint32_t lane_ = 0;
  std::vector<replication*> lanes_{this};  // every lane's, lane 0 first (connect_lanes)
  std::unique_ptr<cluster::peer_links> links_;
  std::unique_ptr<raft::loop_executor> executor_;
  std::unique_ptr<cluster::applied_waits> applied_;  // how far each group applied here (fork reads wait)
  std::unique_ptr<cluster::replicator> repl_;
  // Snapshot transfers: the thread that reads the records a snapshot sent to a peer references (off the
  // loop), and the transfers themselves. Destroyed after repl_ (node_io calls transfers_).
  std::unique_ptr<tier::cold_reader> transfer_reads_;
  std::unique_ptr<replica::snapshot_transfers> transfers_;
  struct waiter {
    replica::shard_wal::completion done;
    std::function<void(bool)> entry_done;  // submit_entry's
    std::size_t bytes = 0;
  };
  using waiter_map = std::unordered_map<std::uint64_t, waiter>;
  // Runs the command's completion on the next loop turn and forgets it.
  void finish(waiter_map::iterator it, replica::durable_result r);

  waiter_map waiting_;
  subscription_entries* subscriptions_ = nullptr;
  std::size_t in_flight_bytes_ = 0;
  std::string scratch_;
};

}  // namespace weir::server
