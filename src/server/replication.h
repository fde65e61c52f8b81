// replication: a stream_shard's writes and reads when the node is one node of a cluster
// (docs/replication.md). Every command goes through the raft group its stream's path hashes to
// (cluster::replicator) and is applied to the shard's state machine only once committed, on every
// node, in log order; the client's answer comes from this node's own apply of its command. Reads first
// wait for a read index (linearizable on every node).
//
// In a cluster every stream lives on core 0 (its shard holds all groups); HTTP runs on every core.
// Lives on the shard's loop; every method runs there.
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
#include "server/shard_wal.h"
#include "storage/env.h"
#include "streams/command.h"

namespace weir::server {

class stream_shard;
class cold_reader;
class snapshot_transfers;

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

class replication {
 public:
  // Opens the peer links and the node log under `data_dir`/raft and starts every group.
  // prepare_log_segments: raft::node_log_options::prepare_segments (the server's prepare-segments with
  // fsync always).
  static result<std::unique_ptr<replication>> open(stream_shard& shard, storage::env& env,
                                                   const std::string& data_dir,
                                                   const cluster::cluster_options& o,
                                                   bool prepare_log_segments = false);
  ~replication();

  // Proposes `c` in its stream's group; `done` runs on this loop once this node applied it (with the
  // outcome of that apply) or once it failed (durable_result::failure: cluster_unavailable).
  void submit(const streams::command& c, shard_wal::completion done);
  // `ready(true)` once this node applied every command committed in `path`'s group before the call and,
  // when `path` is a fork, its source's group through the fork's retain (and so on up a chain of forks:
  // wait_for_sources). `ready(false)`: no read index, or a source's group stayed behind for the read
  // timeout (the read gets 503).
  void linearize(std::string_view path, std::function<void(bool)> ready);
  void linearize_group(std::uint32_t group, std::function<void(bool)> ready);
  std::uint32_t group_of(std::string_view path) const;

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
  // Every group: whether this node leads it, and its term.
  std::vector<std::pair<bool, std::uint64_t>> group_views() const;
  // Commands this node proposed that are not applied or failed yet, and their encoded bytes (the
  // shard refuses writes beyond max-in-flight, as it does for its log when alone).
  std::size_t in_flight() const { return waiting_.size(); }
  std::size_t in_flight_bytes() const { return in_flight_bytes_; }
  bool leads(std::string_view path) const { return repl_->leads(group_of(path)); }
  bool has_quorum() const { return repl_->has_quorum(); }
  bool left() const { return repl_->left(); }  // removed from the cluster (cluster::replicator::left)
  // Elections and leadership changes of this node's groups (GET /metrics: weir_raft_*).
  const cluster::leadership_counts& leadership() const { return repl_->leadership(); }
  // This node's view, as JSON: groups (with their configurations), leaders, terms, indexes, peer links,
  // the desired membership.
  std::string status_json() const;
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
  // read of `path` waits until the group of each source up its fork chain applied the retain its fork
  // recorded (fork_resolution::origin; forks without one wait for nothing).
  void wait_for_sources(std::string path, std::function<void(bool)> ready);
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
  std::unique_ptr<cluster::peer_links> links_;
  std::unique_ptr<raft::loop_executor> executor_;
  std::unique_ptr<cluster::applied_waits> applied_;  // how far each group applied here (fork reads wait)
  std::unique_ptr<cluster::replicator> repl_;
  // Snapshot transfers: the thread that reads the records a snapshot sent to a peer references (off the
  // loop), and the transfers themselves. Destroyed after repl_ (node_io calls transfers_).
  std::unique_ptr<cold_reader> transfer_reads_;
  std::unique_ptr<snapshot_transfers> transfers_;
  struct waiter {
    shard_wal::completion done;
    std::function<void(bool)> entry_done;  // submit_entry's
    std::size_t bytes = 0;
  };
  using waiter_map = std::unordered_map<std::uint64_t, waiter>;
  // Runs the command's completion on the next loop turn and forgets it.
  void finish(waiter_map::iterator it, durable_result r);

  waiter_map waiting_;
  subscription_entries* subscriptions_ = nullptr;
  std::size_t in_flight_bytes_ = 0;
  std::string scratch_;
};

}  // namespace weir::server
