// replication: a cluster node's lane as the server wires it (docs/replication.md). The lane itself, the
// commit path through raft, the cluster apply and the group snapshots, is replica::raft_lane; this class
// runs it on the shard's event loop, over TCP peer links (cluster::peer_links, their TLS and their
// hand-over between lanes), with the node log written on a flusher thread and snapshot records read on a
// thread of their own, and renders what /cluster shows of it. The shard is the lane's host
// (replica::lane_host).
//
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
#include "replica/raft_lane.h"
#include "storage/env.h"
#include "streams/command.h"

namespace weir::tier {
class cold_reader;
}  // namespace weir::tier
namespace weir::server {

class stream_shard;

using replica::cluster_group_of;
using replica::subscription_entries;

class replication {
 public:
  // Opens the peer links, and the raft lane (its node log under `data_dir`/raft) with every group of it.
  // prepare_log_segments: raft::node_log_options::prepare_segments (the server's prepare-segments with
  // fsync always). `lane`: which of o.lanes this one runs (lane 0: the node log raft/node.log; lane l:
  // raft/lane-<l>/node.log).
  static result<std::unique_ptr<replication>> open(stream_shard& shard, storage::env& env,
                                                   const std::string& data_dir,
                                                   const cluster::cluster_options& o,
                                                   bool prepare_log_segments = false, std::uint32_t lane = 0);
  ~replication();

  // The lane: the partition's commit path in a cluster.
  replica::raft_lane& core() { return *lane_; }
  const replica::raft_lane& core() const { return *lane_; }

  void linearize_group(std::uint32_t group, std::function<void(bool)> ready) {
    lane_->linearize_group(group, std::move(ready));
  }
  std::uint32_t group_of(std::string_view path) const { return lane_->group_of(path); }
  std::uint32_t lane() const { return lane_->lane(); }
  std::uint32_t subscription_group_of(std::string_view key) const {
    return lane_->subscription_group_of(key);
  }

  // Lanes, wired by the node before the loops run: every lane's replication, lane 0 first (this one
  // included); lane 0's peer links hand the connections of the other lanes to `handoff`; the others
  // adopt them (adopt_peer, on their loop). The raft lanes follow lane 0 (replica::raft_lane::
  // connect_lanes).
  static void connect_lanes(const std::vector<replication*>& lanes);
  void set_peer_handoff(cluster::peer_links::handoff h) { links_->set_handoff(std::move(h)); }
  void adopt_peer(std::unique_ptr<cluster::peer_links::handed_conn> c) { links_->adopt(std::move(c)); }
  stream_shard& shard() { return shard_; }
  // Subscriptions (docs/subscriptions.md, "Cluster"): replica::raft_lane::attach_subscriptions,
  // submit_entry; cluster::replicator::call_leader.
  void attach_subscriptions(subscription_entries* s) { lane_->attach_subscriptions(s); }
  void submit_entry(std::uint32_t group, std::span<const std::byte> payload, bool here_only,
                    std::function<void(bool)> done) {
    lane_->submit_entry(group, payload, here_only, std::move(done));
  }
  void call_leader(std::uint32_t group, std::vector<std::byte> request,
                   std::function<void(result<std::vector<std::byte>>)> done) {
    lane_->replicator().call_leader(group, std::move(request), std::move(done));
  }
  std::uint64_t node_id() const { return opts_.node_id; }
  // SIGHUP: re-reads the peer-tls files for new peer connections (peer_links::reload_tls); any thread.
  status reload_peer_tls() { return links_->reload_tls(opts_); }
  bool leads_group(std::uint32_t group) const { return lane_->replicator().leads(group); }
  // Every group of the cluster, indexed by group: whether this node leads it, and its term (this lane's
  // groups only; the others' as not led, term 0).
  std::vector<std::pair<bool, std::uint64_t>> group_views() const;
  bool has_quorum() const { return lane_->replicator().has_quorum(); }
  bool left() const { return lane_->left(); }  // removed from the cluster (cluster::replicator::left)
  // Elections and leadership changes of this node's groups (GET /metrics: weir_raft_*).
  const cluster::leadership_counts& leadership() const { return lane_->replicator().leadership(); }
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

  stream_shard& shard_;
  cluster::cluster_options opts_;
  std::unique_ptr<cluster::peer_links> links_;
  std::unique_ptr<raft::loop_executor> executor_;
  // The thread that reads the records a snapshot sent to a peer references (off the loop). Destroyed
  // after lane_ (whose transfers use it).
  std::unique_ptr<tier::cold_reader> transfer_reads_;
  std::unique_ptr<replica::raft_lane> lane_;
};

}  // namespace weir::server
