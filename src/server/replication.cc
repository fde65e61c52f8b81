#include "server/replication.h"

#include <algorithm>
#include <random>
#include <set>

#include "base/fnv.h"
#include "base/json_writer.h"
#include "base/log.h"
#include "replica/group_snapshot.h"
#include "replica/snapshot_transfer.h"
#include "server/node.h"
#include "server/stream_shard.h"
#include "streams/command_codec.h"
#include "tier/cold_reader.h"

namespace weir::server {

namespace {

std::string address_of(const cluster::peer_address& a) {
  return a.host + ":" + std::to_string(a.port);
}

}  // namespace

// FNV-1a of the path, like the cores' hash, but salted so that groups and cores do not line up.
std::uint32_t cluster_group_of(std::string_view path, std::uint32_t groups) {
  return static_cast<std::uint32_t>(fnv1a64(path, fnv1a64_basis ^ 0x67726f7570ull) % groups);
}

replication::replication(stream_shard& shard, cluster::cluster_options o)
    : shard_(shard), opts_(std::move(o)) {}

result<std::unique_ptr<replication>> replication::open(stream_shard& shard, storage::env& env,
                                                       const std::string& data_dir,
                                                       const cluster::cluster_options& o,
                                                       bool prepare_log_segments, std::uint32_t lane) {
  std::unique_ptr<replication> self(new replication(shard, o));
  self->lane_ = lane;
  cluster::peer_links::options lo;
  lo.self = o.node_id;
  lo.listen = o.peer_listen;
  lo.peers = o.peers;
  lo.core_lane = lane;
  lo.core_lanes = o.lanes;
  if (o.peer_tls()) {  // mutual TLS on every peer connection (docs/replication.md, "Peer links")
    auto tls = cluster::load_peer_tls(o);
    if (!tls) return tls.err();
    lo.tls = std::move(*tls);
  }
  auto links = cluster::peer_links::open(shard.loop(), lo);
  if (!links) return links.err();
  self->links_ = std::move(*links);
  const std::string raft_dir =
      lane == 0 ? data_dir + "/raft" : data_dir + "/raft/lane-" + std::to_string(lane);
  if (auto st = env.create_dirs(raft_dir); !st) return st.err();
  cluster::replicator::options ro;
  ro.self = o.node_id;
  for (const auto& [id, addr] : o.peers) ro.addresses.emplace(id, address_of(addr));
  ro.groups = o.groups;
  ro.lane = lane;
  ro.lanes = o.lanes;
  ro.balance_leaders = o.balance_leaders;
  ro.election_timeout_ms = o.election_timeout_ms;
  ro.heartbeat_ms = o.heartbeat_ms();
  ro.log_path = raft_dir + "/node.log";
  ro.prepare_log_segments = prepare_log_segments;
  ro.join = o.join;
  ro.members_path = storage::join_path(data_dir + "/raft", std::string(cluster::members_file_name));
  cluster::replicator::callbacks cb;
  replication* p = self.get();
  cb.apply = [p](std::uint32_t g, std::uint64_t index, cluster::entry_kind kind, std::span<const std::byte> c,
                 std::uint64_t ticket) { p->apply(g, index, kind, c, ticket); };
  cb.serve = [p](std::uint32_t g, std::span<const std::byte> request,
                 std::function<void(std::optional<std::vector<std::byte>>)> reply) {
    if (p->subscriptions_ == nullptr) return reply(std::nullopt);
    p->subscriptions_->serve(g, request, std::move(reply));
  };
  cb.failed = [p](std::uint64_t ticket, cluster::submit_error e) { p->failed(ticket, e); };
  ro.snapshot_threshold = o.snapshot_entries;
  ro.snapshot_bytes = o.snapshot_bytes;
  ro.snapshot_trailing = o.snapshot_trailing;
  cb.snapshot = [p](std::uint32_t g, std::uint64_t index) { return p->take_snapshot(g, index); };
  // Not while the data log holds more unsynced bytes than a quarter of a snapshot's worth: they would be
  // inlined. A sync starts now; the snapshot is taken at a later apply once it is done (or 2 s on).
  cb.snapshot_later = [p, limit = o.snapshot_bytes / 4](std::uint32_t) {
    tier::data_log* d = p->shard_.part().data();
    if (d == nullptr || d->unsynced_bytes() <= limit) return false;
    d->sync_now();
    return true;
  };
  cb.restore = [p](std::uint32_t g, std::uint64_t index, std::span<const std::byte> state) {
    return p->restore_snapshot(g, index, state);
  };
  // A node whose raft log cannot be written stops rather than limp on (docs/replication.md).
  cb.log_failed = [p](const error& e) { p->shard_.owner().fail("the raft node log failed: " + e.reason); };
  io::event_loop& loop = shard.loop();
  self->executor_ = std::make_unique<raft::loop_executor>(loop);
  // A fork's read waits for its source's group as long as a read waits for its read index.
  self->applied_ = std::make_unique<cluster::applied_waits>(*self->executor_, o.groups, ro.read_timeout);
  // The node log is written and synced on a thread of its own; completions come back to the loop.
  auto flusher =
      std::make_unique<raft::thread_flusher>([&loop](std::function<void()> fn) { loop.post(std::move(fn)); });
  auto repl = cluster::replicator::open(*self->executor_, std::move(flusher), env, *self->links_,
                                        std::move(ro), std::move(cb));
  if (!repl) return repl.err();
  self->repl_ = std::move(*repl);
  self->open_snapshot_transfers();
  return self;
}

replication::~replication() {
  repl_.reset();  // before the links it sends on, and the transfers its node_io calls
  transfers_.reset();
  transfer_reads_.reset();
  applied_.reset();
  links_.reset();
}

void replication::open_snapshot_transfers() {
  // One thread: a transfer reads a chunk at a time (a few ahead), and client cold reads keep the node's
  // own cold_reader threads.
  transfer_reads_ = std::make_unique<tier::cold_reader>(1);
  raft::node_io& io = repl_->io();
  replica::snapshot_transfers::ports p;
  p.send_chunk = [&io](raft::node_id to, raft::group_id g, raft::wire::snapshot_chunk c) {
    io.send_chunk(to, g, std::move(c));
  };
  p.send_ack = [&io](raft::node_id to, raft::group_id g, raft::wire::snapshot_chunk_ack a) {
    io.send_chunk_ack(to, g, a);
  };
  p.send_install = [&io](const replica::snapshot_transfers::install& s) { return io.send_install(s); };
  p.deliver = [&io](const replica::snapshot_transfers::install& s) { return io.deliver_install(s); };
  p.read = [this](std::vector<replica::snapshot_transfers::piece_read> pieces,
                  replica::snapshot_transfers::read_done done) {
    streams::read_plan plan;
    for (const auto& r : pieces) {
      streams::chunk_slice s;
      s.at = streams::disk_location{r.key.segment, r.key.offset, r.key.core, r.key.data_offset};
      s.begin = r.key.begin + r.offset;
      s.size = r.length;
      plan.slices.push_back(s);
      plan.bytes += r.length;
    }
    plan.next = streams::stream_offset(plan.bytes);
    // The segments stay while the group's snapshot pins them; one reclaimed meanwhile (a newer
    // snapshot pinned others) fails the read, and the transfer with it (libraft sends the newer one).
    transfer_reads_->submit(shard_.part().hot().readers(), std::move(plan), shard_.loop(),
                            [done = std::move(done), n = pieces.size()](streams::read_plan got, status st) {
                              if (!st) return done(st.err());
                              std::vector<std::string> out;
                              for (const auto& s : got.slices) out.emplace_back(s.view());
                              if (out.size() != n)
                                return done(make_error(storage::errc::io_error, "short read"));
                              done(std::move(out));
                            });
  };
  p.write = [this](std::uint64_t transfer, std::string bytes, tier::data_log::raw_done done) {
    if (tier::data_log* d = shard_.part().data())
      return d->write_raw(transfer, std::move(bytes), std::move(done));
    shard_.loop().post([done = std::move(done)] {
      done(make_error(storage::errc::invalid_argument, "this node has no data log"));
    });
  };
  p.unpin = [this](std::uint64_t transfer) {
    if (tier::data_log* d = shard_.part().data()) d->unpin_transfer(transfer);
  };
  p.when_durable = [this](const streams::disk_location& at, std::function<void()> fn) {
    if (tier::data_log* d = shard_.part().data()) d->when_durable(at, std::move(fn));
  };
  p.state_offset = [](std::span<const std::byte> data) {
    return cluster::replicator::snapshot_state_offset(data);
  };
  replica::snapshot_transfers::options o;
  // Transfer ids differ from an earlier run's (a receiver may still hold one of those).
  o.first_id = ((std::uint64_t(std::random_device{}()) << 32 | std::random_device{}()) >> 1) | 1;
  transfers_ = std::make_unique<replica::snapshot_transfers>(*executor_, std::move(p), o);
  io.set_snapshot_transfers(transfers_.get());
}

std::uint32_t replication::group_of(std::string_view path) const {
  return cluster_group_of(path, opts_.groups);
}

std::uint32_t replication::subscription_group_of(std::string_view key) const {
  // Lane 0's groups are 0, L, 2L, ...: ceil(groups / L) of them.
  const std::uint32_t lanes = opts_.lanes;
  return cluster_group_of(key, (opts_.groups + lanes - 1) / lanes) * lanes;
}

void replication::connect_lanes(const std::vector<replication*>& lanes) {
  std::vector<cluster::replicator::lane_port> ports;
  for (replication* r : lanes) {
    r->lanes_ = lanes;
    ports.push_back(
        {r->repl_.get(), [r](std::function<void()> fn) { r->shard_.loop().post(std::move(fn)); }});
  }
  cluster::replicator::connect_lanes(ports);
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

void replication::on_lane(replication& r, std::function<void()> fn) {
  if (&r == this) return fn();
  r.shard_.loop().post(std::move(fn));
}

streams::state_machine::path_predicate replication::in_group(std::uint32_t group) const {
  return [group, groups = opts_.groups](std::string_view path) {
    return cluster_group_of(path, groups) == group;
  };
}

result<std::vector<std::byte>> replication::take_snapshot(std::uint32_t group, std::uint64_t index) {
  std::set<std::uint64_t> segments;  // of the data log, that the snapshot references
  auto streams =
      shard_.part().machine().snapshot_part(in_group(group), [&](const streams::disk_location& at) {
        if (!shard_.part().data_durable(at)) return false;
        segments.insert(at.segment);
        return true;
      });
  if (!streams) return streams.err();
  const std::vector<std::byte> subs =
      subscriptions_ != nullptr ? subscriptions_->snapshot_part(group) : std::vector<std::byte>{};
  // Pinned from now on: a snapshot that does not become durable leaves the previous one in the node
  // log, whose references the state still holds or a later snapshot pinned (docs/replication.md).
  shard_.part().pin_snapshot_segments(group, std::vector<std::uint64_t>(segments.begin(), segments.end()));
  log::debug("weir cluster: group {} snapshot at {}: {} bytes of streams, {} of subscriptions", group, index,
             streams->size(), subs.size());
  return replica::encode_group_snapshot(*streams, subs);
}

status replication::restore_snapshot(std::uint32_t group, std::uint64_t index,
                                     std::span<const std::byte> state) {
  auto parts = replica::decode_group_snapshot(state);
  if (!parts) return parts.err();
  if (auto st = shard_.restore_part(parts->streams, in_group(group)); !st) return st;
  // What the snapshot references stays on disk until the group's next snapshot, as when it was taken:
  // this node may send it to a peer (a transfer reads every record) after the state moved on.
  shard_.part().pin_snapshot_segments(group, shard_.part().machine().referenced_segments(0, in_group(group)));
  // A snapshot that came in a transfer: its copies are pinned through the state from now on.
  if (transfers_) transfers_->restored(raft::group_id(group));
  if (subscriptions_ != nullptr) {
    if (auto st = subscriptions_->restore_part(group, parts->subscriptions); !st) return st;
  }
  applied_->applied(group, index);
  log::info("weir cluster: group {} restored from its snapshot at {} ({} bytes)", group, index, state.size());
  return {};
}

streams::outcome replication::submit(const streams::command& c, completion done) {
  streams::encode_into(c, scratch_);
  const std::uint32_t g = group_of(streams::command_path(c));
  const std::uint64_t ticket =
      repl_->submit(g, std::as_bytes(std::span<const char>(scratch_.data(), scratch_.size())));
  waiting_.emplace(ticket, waiter{std::move(done), {}, scratch_.size()});
  in_flight_bytes_ += scratch_.size();
  return {};
}

void replication::prepare_read(const std::string& path, std::int64_t,
                               std::function<void(replica::errc, streams::errc)> ready) {
  linearize(std::string_view(path), [this, path, ready = std::move(ready)](bool ok) mutable {
    if (!ok) return ready(replica::errc::cluster_unavailable, streams::errc::ok);
    const std::int64_t now = shard_.now_ms();
    streams::read_result head = shard_.part().machine().head(path, now);
    if (head.code != streams::errc::ok) return ready(replica::errc::ok, head.code);
    if (!head.meta->expiry.ttl_seconds) return ready(replica::errc::ok, streams::errc::ok);
    // A sliding TTL: the renewal is a command like any other, replicated before the read is served.
    (void)submit(streams::touch_command{path, now},
                 [ready = std::move(ready)](replica::durable_result& r) { ready(r.failure, r.o.code); });
  });
}

void replication::linearize(std::string_view path, std::function<void(bool)> ready) {
  repl_->read_index(group_of(path),
                    [this, path = std::string(path), ready = std::move(ready)](bool ok) mutable {
                      if (!ok) return ready(false);
                      wait_for_sources(std::move(path), std::move(ready));
                    });
}

void replication::wait_for_sources(std::string path, std::function<void(bool)> ready) {
  // Most reads are of streams that are not forks (or forks made before origins were recorded).
  auto w = shard_.part().machine().fork_wait_of(path);
  if (!w) return ready(true);
  // One link at a time, on the lane of the source's group (the source lives there): the source's own
  // origin is known there only once its group applied its create, which this wait covers (the fork's
  // retain came after the source's create). The answer comes back lane by lane.
  replication& there = lane_of_group(w->origin.group);
  auto back = [this, &there, ready = std::move(ready)](bool ok) mutable {
    there.on_lane(*this, [ready = std::move(ready), ok]() mutable { ready(ok); });
  };
  on_lane(there, [&there, w = std::move(*w), back = std::move(back)]() mutable {
    there.applied_->wait_chain(
        [pos = std::optional(cluster::applied_waits::position{w.origin.group, w.origin.index})]() mutable {
          return std::exchange(pos, std::nullopt);
        },
        [&there, source = std::move(w.source), back = std::move(back)](bool ok) mutable {
          if (!ok) return back(false);
          there.wait_for_sources(std::move(source), std::move(back));
        });
  });
}

void replication::linearize_group(std::uint32_t group, std::function<void(bool)> ready) {
  repl_->read_index(group, std::move(ready));
}

void replication::submit_entry(std::uint32_t group, std::span<const std::byte> payload, bool here_only,
                               std::function<void(bool)> done) {
  const std::uint64_t ticket = repl_->submit(group, payload, cluster::entry_kind::subscriptions, here_only);
  waiter w;
  w.entry_done = std::move(done);
  w.bytes = payload.size();
  waiting_.emplace(ticket, std::move(w));
  in_flight_bytes_ += payload.size();
}

std::vector<std::pair<bool, std::uint64_t>> replication::group_views() const {
  std::vector<std::pair<bool, std::uint64_t>> out(opts_.groups, {false, 0});
  for (const auto& g : repl_->status()) {
    if (g.group < out.size()) out[g.group] = {g.leader == opts_.node_id, g.term};
  }
  return out;
}

void replication::apply(std::uint32_t group, std::uint64_t index, cluster::entry_kind kind,
                        std::span<const std::byte> bytes, std::uint64_t ticket) {
  // Reads of forks waiting for this group go on once this apply returned (applied_waits posts them).
  applied_->applied(group, index);
  if (kind == cluster::entry_kind::subscriptions) {
    if (subscriptions_ != nullptr) subscriptions_->apply(group, bytes);
    if (ticket == 0) return;
    if (auto it = waiting_.find(ticket); it != waiting_.end()) finish(it, replica::durable_result{});
    return;
  }
  auto c = streams::decode(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  replica::durable_result r;
  if (!c) {
    // The same bytes fail on every node: the command is skipped everywhere alike.
    log::error("weir cluster: group {} entry {}: undecodable command ({}); skipped", group, index,
               c.err().reason);
    r.failure = replica::errc::storage_unavailable;
  } else {
    // The node that proposed it (and waits for it here, in this run) proposes the fork releases it
    // causes (stream_shard::propose_release): one node, once, not every node nor every replay.
    const bool proposed_here = ticket != 0 && waiting_.contains(ticket);
    // A retain's outcome carries its place (set_entry_place): the fork's create records it
    // (fork_resolution::origin), and every node reads the fork only once this group applied this far.
    r.o = shard_.apply_committed(*c, group, index, proposed_here);
  }
  if (ticket == 0) return;
  auto it = waiting_.find(ticket);
  if (it == waiting_.end()) return;
  // Answer after the current apply returns (the answer may propose more: a fork's create after its retain).
  finish(it, std::move(r));
}

void replication::finish(waiter_map::iterator it, replica::durable_result r) {
  in_flight_bytes_ -= it->second.bytes;
  shard_.in_flight_went_down();  // writes waiting for admission (they propose: never inside libraft)
  if (it->second.entry_done) {
    shard_.loop().post(
        [done = std::move(it->second.entry_done), ok = r.failure == replica::errc::ok] { done(ok); });
    waiting_.erase(it);
    return;
  }
  shard_.loop().post([done = std::move(it->second.done), r = std::move(r)]() mutable {
    if (done) done(r);
  });
  waiting_.erase(it);
}

void replication::failed(std::uint64_t ticket, cluster::submit_error e) {
  auto it = waiting_.find(ticket);
  if (it == waiting_.end()) return;
  replica::durable_result r;
  r.failure = e == cluster::submit_error::no_leader ? replica::errc::cluster_unavailable
                                                    : replica::errc::cluster_outcome_unknown;
  finish(it, std::move(r));
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
  write_membership(w, repl_->desired_membership());
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
  repl_->add_member(id, address, as_json(std::move(done)));
}

void replication::remove_member(std::uint64_t id, membership_done done) {
  repl_->remove_member(id, as_json(std::move(done)));
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
  for (const auto& g : repl_->status()) {
    l.groups.emplace_back(g.group, group_json(g));
    l.led += g.leader == opts_.node_id ? 1 : 0;
  }
  l.quorum = repl_->has_quorum();
  l.whole = status_json();
  return l;
}

std::string replication::status_json(const std::vector<lane_status>& others) const {
  json_writer w;
  w.begin_object();
  w.key("node_id").value(std::int64_t(opts_.node_id));
  w.key("groups").value(std::int64_t(opts_.groups));
  bool quorum = repl_->has_quorum();
  for (const lane_status& l : others) quorum = quorum && l.quorum;
  w.key("quorum").value(quorum);
  w.key("lane").value(std::int64_t(lane_));
  w.key("lanes").value(std::int64_t(opts_.lanes));
  w.key("left").value(repl_->left());  // removed from the cluster: takes no request
  // Pauses of this node's loop that libraft's clock left out (raft::node_io::raft_now).
  w.key("loop_stalls").value(std::int64_t(repl_->io().counters().stalls));
  // The longest a follower here heard no AppendEntries from its group's leader (raft::node_io::stats).
  w.key("longest_leader_silence_ms").value(repl_->io().counters().longest_leader_silence_ms);
  // Check-quorum contacts a leader here took from a voter's other frames (docs/replication.md,
  // "Elections": a leader whose followers' results wait in a queue does not step down).
  w.key("contacts_vouched").value(std::int64_t(repl_->contacts_vouched()));
  // Elections and leadership changes of this node's groups since it started (docs/replication.md,
  // "Elections"; each is logged, rate-limited).
  const cluster::leadership_counts& lc = repl_->leadership();
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
  w.key("in_flight_bytes").value(std::int64_t(in_flight_bytes_));
  w.end_object();
  std::uint64_t led = 0;
  const auto groups = repl_->status();
  for (const auto& g : groups) led += g.leader == opts_.node_id ? 1 : 0;
  for (const lane_status& l : others) led += l.led;
  w.key("groups_led").value(std::int64_t(led));
  w.key("peers").begin_array();
  for (const auto& l : links_->status()) {
    w.begin_object();
    w.key("node_id").value(std::int64_t(l.peer));
    const auto& addresses = repl_->peer_addresses();
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
  write_membership(w, repl_->desired_membership());
  // Group snapshots since start (docs/replication.md, "Snapshots").
  w.key("snapshots").begin_object();
  w.key("taken").value(std::int64_t(repl_->snapshots_taken()));
  w.key("deferred").value(std::int64_t(repl_->snapshots_deferred()));
  w.key("restored").value(std::int64_t(repl_->snapshots_restored()));
  w.key("sent").value(std::int64_t(repl_->snapshots_sent()));
  // Chunked transfers (server/snapshot_transfer.h): record bytes in chunks, transfers either side.
  const replica::snapshot_transfer_stats& ts = transfers_->stats();
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
  // The raft node log: on disk, needed by the groups, compaction (docs/replication.md, "Node log format").
  const auto nl = repl_->node_log_figures();
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
  const streams::fork_sweep::counters swept = shard_.fork_sweep_counts();
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
  w.end_object();
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
