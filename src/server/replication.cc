#include "server/replication.h"

#include <algorithm>
#include <utility>

#include "base/json_writer.h"
#include "base/log.h"
#include "raft/thread_flusher.h"
#include "replica/cluster_cold_snapshots.h"
#include "replica/cold_mover.h"
#include "replica/snapshot_transfer.h"
#include "server/node.h"
#include "server/stream_shard.h"
#include "tier/cold_reader.h"

namespace weir::server {

replication::replication(stream_shard& shard, cluster::cluster_options o)
    : shard_(shard), opts_(std::move(o)) {}

result<std::unique_ptr<replication>> replication::open(stream_shard& shard, storage::env& env,
                                                       const std::string& data_dir,
                                                       const cluster::cluster_options& o,
                                                       bool prepare_log_segments, std::uint32_t lane) {
  std::unique_ptr<replication> self(new replication(shard, o));
  cluster::peer_links::options lo;
  lo.self = o.node_id;
  lo.listen = o.peer_listen;
  lo.peers = o.peers;
  lo.core_lane = lane;
  lo.core_lanes = o.lanes;
  lo.incarnation = o.incarnation;
  // Core lane 0 reads every hello and judges its incarnation (docs/replication.md, "A node that lost its
  // data directory").
  if (lane == 0) {
    auto book = cluster::incarnation_book::open(env, data_dir);
    if (!book) return book.err();
    lo.book = std::make_shared<cluster::incarnation_book>(std::move(*book));
  }
  if (o.peer_tls()) {  // mutual TLS on every peer connection (docs/replication.md, "Peer links")
    auto tls = cluster::load_peer_tls(o);
    if (!tls) return tls.err();
    lo.tls = std::move(*tls);
  }
  io::event_loop& loop = shard.loop();
  auto links = cluster::peer_links::open(loop, lo);
  if (!links) return links.err();
  self->links_ = std::move(*links);
  // A peer refused this node's links for its data directory's incarnation: this directory is not the one
  // the cluster knew under this id, so the node stops rather than run beside a cluster that refuses it.
  self->links_->set_refusal_handler([&shard, id = o.node_id,
                                     failed = false](const cluster::peer_refusal& r) mutable {
    if (std::exchange(failed, true)) return;
    shard.fail(fmt::format(
        "node {} refuses this node's peer links: this data directory (incarnation {}) is not the one node {} "
        "had (incarnation {}), which node {} remembers: a node that lost its data directory must be removed "
        "(DELETE /cluster/members?id={} on a member) and started on an empty directory with --join, then "
        "added (POST /cluster/members); docs/operations.md, \"A node that lost its data directory\"",
        r.refused_by, r.presented, id, r.remembered, r.refused_by, id));
  });
  self->executor_ = std::make_unique<raft::loop_executor>(loop);
  // One thread: a transfer reads a chunk at a time (a few ahead), and client cold reads keep the node's
  // own cold_reader threads.
  self->transfer_reads_ = std::make_unique<tier::cold_reader>(1);
  replica::raft_lane_options ro;
  ro.cluster = o;
  ro.lane = lane;
  ro.data_dir = data_dir;
  ro.prepare_log_segments = prepare_log_segments;
  ro.fork_sweep_ms = shard.options().fork_sweep_ms;
  ro.fork_sweep_min_age_ms = shard.options().fork_sweep_min_age_ms;
  ro.read_slices = [reads = self->transfer_reads_.get(), &shard](streams::read_plan plan,
                                                                 tier::cold_reader::completion done) {
    reads->submit(shard.part().hot().readers(), std::move(plan), shard.loop(), std::move(done));
  };
  // The node log is written and synced on a thread of its own; completions come back to the loop.
  auto flusher =
      std::make_unique<raft::thread_flusher>([&loop](std::function<void()> fn) { loop.post(std::move(fn)); });
  auto l = replica::raft_lane::open(shard.part(), *self->executor_, std::move(flusher), *self->links_, env,
                                    shard, std::move(ro));
  if (!l) return l.err();
  self->lane_ = std::move(*l);
  return self;
}

replication::~replication() {
  lane_.reset();  // before the links it sends on and the thread its transfers read on
  transfer_reads_.reset();
  links_.reset();
}

void replication::connect_lanes(const std::vector<replication*>& lanes) {
  std::vector<replica::raft_lane*> cores;
  for (replication* r : lanes) cores.push_back(r->lane_.get());
  replica::raft_lane::connect_lanes(cores);
  if (lanes.size() < 2) return;
  lanes[0]->set_peer_handoff(
      [lanes](std::uint32_t core_lane, std::unique_ptr<cluster::peer_links::handed_conn> c) {
        if (core_lane >= lanes.size()) return;  // closed by c's destructor
        replication* to = lanes[core_lane];
        // A task is a copyable function: the connection travels in a shared_ptr.
        auto held = std::make_shared<std::unique_ptr<cluster::peer_links::handed_conn>>(std::move(c));
        to->shard_.loop().post([to, held] { to->adopt_peer(std::move(*held)); });
      });
}

std::vector<std::pair<bool, std::uint64_t>> replication::group_views() const {
  std::vector<std::pair<bool, std::uint64_t>> out(opts_.groups, {false, 0});
  for (const auto& g : lane_->replicator().status()) {
    if (g.group < out.size()) out[g.group] = {g.leader == opts_.node_id, g.term};
  }
  return out;
}

namespace {
void write_membership(json_writer& w, const cluster::membership& m) {
  w.begin_object();
  w.key("epoch").value(std::int64_t(m.epoch));
  w.key("members").begin_array();
  for (const auto& [id, address] : m.members) {
    w.begin_object();
    w.key("node_id").value(std::int64_t(id));
    w.key("address").value(address);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void write_ids(json_writer& w, const std::vector<std::uint64_t>& ids) {
  w.begin_array();
  for (std::uint64_t id : ids) w.value(std::int64_t(id));
  w.end_array();
}
}  // namespace

std::string replication::membership_json() const {
  json_writer w;
  write_membership(w, lane_->replicator().desired_membership());
  return w.take();
}

namespace {
cluster::replicator::membership_done as_json(replication::membership_done done) {
  return [done = std::move(done)](result<cluster::membership> m) {
    if (!m) return done(m.err());
    json_writer w;
    write_membership(w, *m);
    done(w.take());
  };
}
}  // namespace

void replication::add_member(std::uint64_t id, std::string_view address, membership_done done) {
  lane_->replicator().add_member(id, address, as_json(std::move(done)));
}

void replication::remove_member(std::uint64_t id, membership_done done) {
  lane_->replicator().remove_member(id, as_json(std::move(done)));
}

namespace {
std::string group_json(const cluster::replicator::group_status& g) {
  json_writer w;
  w.begin_object();
  w.key("group").value(std::int64_t(g.group));
  w.key("role").value(std::string_view(g.role));
  w.key("leader").value(std::int64_t(g.leader));
  w.key("term").value(std::int64_t(g.term));
  w.key("commit_index").value(std::int64_t(g.commit_index));
  w.key("applied_index").value(std::int64_t(g.applied_index));
  w.key("last_index").value(std::int64_t(g.last_index));
  w.key("voters");
  write_ids(w, g.voters);
  w.key("non_voters");
  write_ids(w, g.non_voters);
  w.key("changing").value(g.changing);
  w.end_object();
  return w.take();
}
}  // namespace

replication::lane_status replication::status_part() const {
  lane_status l;
  for (const auto& g : lane_->replicator().status()) {
    l.groups.emplace_back(g.group, group_json(g));
    l.led += g.leader == opts_.node_id ? 1 : 0;
  }
  l.quorum = lane_->replicator().has_quorum();
  l.whole = status_json();
  return l;
}

std::string replication::status_json(const std::vector<lane_status>& others) const {
  json_writer w;
  w.begin_object();
  w.key("node_id").value(std::int64_t(opts_.node_id));
  w.key("groups").value(std::int64_t(opts_.groups));
  bool quorum = lane_->replicator().has_quorum();
  for (const lane_status& l : others) quorum = quorum && l.quorum;
  w.key("quorum").value(quorum);
  w.key("lane").value(std::int64_t(lane_->lane()));
  w.key("lanes").value(std::int64_t(opts_.lanes));
  w.key("left").value(lane_->left());  // removed from the cluster: takes no request
  // Pauses of this node's loop that libraft's clock left out (raft::node_io::raft_now).
  w.key("loop_stalls").value(std::int64_t(lane_->replicator().io().counters().stalls));
  // The longest a follower here heard no AppendEntries from its group's leader (raft::node_io::stats).
  w.key("longest_leader_silence_ms").value(lane_->replicator().io().counters().longest_leader_silence_ms);
  // Check-quorum contacts a leader here took from a voter's other frames (docs/replication.md,
  // "Elections": a leader whose followers' results wait in a queue does not step down).
  w.key("contacts_vouched").value(std::int64_t(lane_->replicator().contacts_vouched()));
  // Elections and leadership changes of this node's groups since it started (docs/replication.md,
  // "Elections"; each is logged, rate-limited).
  const cluster::leadership_counts& lc = lane_->replicator().leadership();
  w.key("leadership").begin_object();
  w.key("elections_started").value(std::int64_t(lc.elections_started));
  w.key("elections_timeout").value(std::int64_t(lc.elections_timeout));
  w.key("elections_transfer").value(std::int64_t(lc.elections_transfer));
  w.key("elections_link_closed").value(std::int64_t(lc.elections_link_closed));
  w.key("leaderships_won").value(std::int64_t(lc.leaderships_won));
  w.key("leaderships_lost").value(std::int64_t(lc.leaderships_lost));
  w.key("lost_higher_term").value(std::int64_t(lc.lost_higher_term));
  w.key("lost_quorum").value(std::int64_t(lc.lost_quorum));
  w.key("leader_changes").value(std::int64_t(lc.leader_changes));
  w.key("handovers_started").value(std::int64_t(lc.handovers_started));
  w.key("balance_held").value(std::int64_t(lc.balance_held));
  w.end_object();
  // Writes held back while this node's proposals in flight held raft-proposal-bytes (stream_shard).
  const stream_shard::admission_counts held = shard_.admission();
  w.key("admission").begin_object();
  w.key("waiting").value(std::int64_t(held.waiting));
  w.key("waited").value(std::int64_t(held.waited));
  w.key("expired").value(std::int64_t(held.expired));
  w.key("in_flight_bytes").value(std::int64_t(lane_->in_flight_bytes()));
  w.end_object();
  std::uint64_t led = 0;
  const auto groups = lane_->replicator().status();
  for (const auto& g : groups) led += g.leader == opts_.node_id ? 1 : 0;
  for (const lane_status& l : others) led += l.led;
  w.key("groups_led").value(std::int64_t(led));
  w.key("peers").begin_array();
  for (const auto& l : links_->status()) {
    w.begin_object();
    w.key("node_id").value(std::int64_t(l.peer));
    const auto& addresses = lane_->replicator().peer_addresses();
    auto a = addresses.find(l.peer);
    w.key("address").value(a != addresses.end() ? a->second : std::string());
    w.key("out_connected").value(l.out_connected);
    w.key("in_connected").value(l.in_connected);
    w.key("bytes_sent").value(std::int64_t(l.bytes_sent));
    w.key("bytes_received").value(std::int64_t(l.bytes_received));
    w.key("connects").value(std::int64_t(l.connects));
    w.key("drops").value(std::int64_t(l.drops));
    w.key("queued_bytes").value(std::int64_t(l.queued_bytes));
    w.key("max_queue_ms").value(std::int64_t(l.max_queue_ms));
    w.key("max_urgent_queue_ms").value(std::int64_t(l.max_urgent_queue_ms));
    w.key("read_yields").value(std::int64_t(l.read_yields));
    if (links_->tls()) w.key("tls_refused").value(std::int64_t(l.tls_refused));
    w.end_object();
  }
  w.end_array();
  // Peer-link TLS: refusals in all, those of connections that never said which node they were included.
  w.key("peer_tls").begin_object();
  w.key("enabled").value(links_->tls());
  w.key("refused").value(std::int64_t(links_->tls_refused()));
  w.end_object();
  // Every lane's groups, in group order (entry g is group g when the node holds every group).
  std::vector<std::pair<std::uint32_t, std::string>> listed;
  for (const auto& g : groups) listed.emplace_back(g.group, group_json(g));
  for (const lane_status& l : others) listed.insert(listed.end(), l.groups.begin(), l.groups.end());
  std::sort(listed.begin(), listed.end());
  w.key("raft_groups").begin_array();
  for (const auto& [group, json] : listed) w.raw(json);
  w.end_array();
  w.key("membership");
  write_membership(w, lane_->replicator().desired_membership());
  // Group snapshots since start (docs/replication.md, "Snapshots").
  w.key("snapshots").begin_object();
  w.key("taken").value(std::int64_t(lane_->replicator().snapshots_taken()));
  w.key("deferred").value(std::int64_t(lane_->replicator().snapshots_deferred()));
  w.key("restored").value(std::int64_t(lane_->replicator().snapshots_restored()));
  w.key("sent").value(std::int64_t(lane_->replicator().snapshots_sent()));
  // Chunked transfers (server/snapshot_transfer.h): record bytes in chunks, transfers either side.
  const replica::snapshot_transfer_stats& ts = lane_->transfer_stats();
  w.key("chunks_sent").value(std::int64_t(ts.chunks_sent));
  w.key("chunk_bytes_sent").value(std::int64_t(ts.bytes_sent));
  w.key("chunks_received").value(std::int64_t(ts.chunks_received));
  w.key("chunk_bytes_received").value(std::int64_t(ts.bytes_received));
  w.key("transfers_sent").value(std::int64_t(ts.transfers_sent));
  w.key("transfers_completed").value(std::int64_t(ts.transfers_completed));
  w.key("transfers_dropped").value(std::int64_t(ts.transfers_dropped));
  w.key("transfers_replaced").value(std::int64_t(ts.transfers_replaced));
  w.key("transfers_continued").value(std::int64_t(ts.transfers_continued));
  w.key("transfers_kept").value(std::int64_t(ts.transfers_kept));
  w.key("transfers_resumed").value(std::int64_t(ts.transfers_resumed));
  w.key("chunk_bytes_skipped").value(std::int64_t(ts.bytes_skipped));
  w.end_object();
  // The raft node log: on disk, needed by the groups, compaction (docs/replication-formats.md, "Node log
  // format").
  const auto nl = lane_->replicator().node_log_figures();
  w.key("node_log").begin_object();
  w.key("disk_bytes").value(std::int64_t(nl.disk_bytes));
  w.key("live_bytes").value(std::int64_t(nl.live_bytes));
  w.key("segments").value(std::int64_t(nl.segments));
  w.key("bytes_written").value(std::int64_t(nl.bytes_written));
  w.key("batches_synced").value(std::int64_t(nl.batches_synced));
  w.key("bytes_reclaimed").value(std::int64_t(nl.bytes_reclaimed));
  w.key("segments_deleted").value(std::int64_t(nl.segments_deleted));
  w.key("entries_carried").value(std::int64_t(nl.entries_carried));
  w.end_object();
  // Fork references on this node (docs/replication.md, "Forks"): the streams forks hold (soft-deleted
  // ones included) and their references, which every node's state must agree on once it applied the same.
  std::int64_t fork_sources = 0, fork_references = 0;
  for (const auto& [path, count] : shard_.part().machine().ref_counts()) {
    ++fork_sources;
    fork_references += count;
  }
  w.key("fork_references").begin_object();
  w.key("sources").value(fork_sources);
  w.key("references").value(fork_references);
  // The fork sweep of the groups this node leads (streams/fork_sweep.h): references it found without
  // their fork and gave back (lost releases), and dead origins recorded (tombstones, all groups).
  const streams::fork_sweep::counters swept = lane_->fork_sweep_counts();
  w.key("sweeps").value(std::int64_t(swept.passes));
  w.key("releases_recovered").value(std::int64_t(swept.recovered));
  w.key("tombstones").value(std::int64_t(shard_.part().machine().tombstones()));
  w.end_object();
  // Stream data on this node (data_log.h): in memory (the hot tier) and in the data log.
  w.key("stream_data").begin_object();
  w.key("hot_bytes").value(std::int64_t(shard_.part().hot().bytes()));
  w.key("hot_budget").value(std::int64_t(shard_.part().hot().budget()));
  w.key("hot_evicted").value(std::int64_t(shard_.part().hot().evicted()));
  if (const tier::data_log* d = shard_.part().data()) {
    const tier::data_log_stats st = d->stats();
    w.key("data_log_records").value(std::int64_t(st.records));
    w.key("data_log_bytes_written").value(std::int64_t(st.bytes));
    w.key("data_log_unsynced_bytes").value(std::int64_t(st.unsynced_bytes));
    w.key("data_log_syncs").value(std::int64_t(st.syncs));
    w.key("data_log_reclaims").value(std::int64_t(st.reclaims));
    w.key("data_log_segments_removed").value(std::int64_t(st.segments_removed));
    w.key("data_log_write_failures").value(std::int64_t(st.write_failures));
    w.key("data_log_segments").value(std::int64_t(st.log.segments));
    w.key("data_log_disk_bytes").value(std::int64_t(st.log.segment_bytes));
  }
  // Records that stay where the node log wrote them, and the node-log segments kept for them.
  w.key("node_log_records").value(std::int64_t(shard_.part().node_log_records()));
  w.key("node_log_record_bytes").value(std::int64_t(shard_.part().node_log_record_bytes()));
  const replica::raft_lane::kept_figures kept = lane_->kept();
  w.key("node_log_kept_segments").value(std::int64_t(kept.segments));
  w.key("node_log_kept_bytes").value(std::int64_t(kept.bytes));
  w.key("node_log_kept_dropped").value(std::int64_t(kept.dropped));
  w.end_object();
  // The cold tier (docs/cold-tier.md, "A cluster"): this lane's uploads (from the groups it leads) and
  // what this node keeps of its streams on disk.
  if (const replica::cold_mover* m = shard_.part().mover()) {
    const replica::cold_mover::upload_view up = m->uploads();
    const replica::cold_mover_stats& st = m->stats();
    w.key("cold_tier").begin_object();
    w.key("groups_uploading").value(std::int64_t(up.groups_led));
    w.key("objects_uploaded").value(std::int64_t(st.objects));
    w.key("bytes_uploaded").value(std::int64_t(st.bytes));
    w.key("upload_waiting_bytes").value(std::int64_t(up.bytes_waiting));
    w.key("upload_failures").value(std::int64_t(up.attempts_failed));
    w.key("last_upload_error").value(up.last_error);
    w.key("local_bytes").value(std::int64_t(m->local_bytes()));
    w.key("held_bytes").value(std::int64_t(st.held_bytes));
    w.key("dropped_bytes").value(std::int64_t(st.forgotten_bytes));
    w.key("appends_refused").value(shard_.part().local_budget_full());
    w.key("objects_deleted").value(std::int64_t(m->sweep_stats().objects_deleted));
    if (const replica::cluster_cold_snapshots* sn = shard_.part().cluster_snapshots()) {
      w.key("restore_snapshots").value(std::int64_t(sn->stats().uploaded));
      w.key("restore_snapshot_failures").value(std::int64_t(sn->stats().failed));
      w.key("last_restore_snapshot_error").value(sn->stats().last_error);
    }
    w.end_object();
  }
  // A node of several lanes: the other lanes' own views (their links, node logs, snapshots, data logs).
  if (!others.empty()) {
    w.key("other_lanes").begin_array();
    for (const lane_status& l : others) w.raw(l.whole);
    w.end_array();
  }
  w.end_object();
  return w.take();
}

}  // namespace weir::server
