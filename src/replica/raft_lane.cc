#include "replica/raft_lane.h"

#include <algorithm>
#include <random>
#include <set>

#include "base/fnv.h"
#include "base/log.h"
#include "raft/node_log_framing.h"
#include "replica/group_snapshot.h"
#include "replica/snapshot_transfer.h"
#include "streams/command_codec.h"

namespace weir::replica {

namespace {

std::string address_of(const cluster::peer_address& a) {
  return a.host + ":" + std::to_string(a.port);
}

constexpr const char* node_log_name = "node.log";  // in raft_dir

}  // namespace

// FNV-1a of the path, like the cores' hash, but salted so that groups and cores do not line up.
std::uint32_t cluster_group_of(std::string_view path, std::uint32_t groups) {
  return static_cast<std::uint32_t>(fnv1a64(path, fnv1a64_basis ^ 0x67726f7570ull) % groups);
}

raft_lane::raft_lane(partition& part, raft::executor& ex, cluster::links& links, lane_host& host,
                     raft_lane_options o)
    : part_(part), ex_(ex), links_(links), host_(host), opts_(std::move(o)) {}

result<std::unique_ptr<raft_lane>> raft_lane::open(partition& part, raft::executor& ex,
                                                   std::unique_ptr<raft::log_flusher> flusher,
                                                   cluster::links& links, storage::env& env, lane_host& host,
                                                   raft_lane_options opts) {
  std::unique_ptr<raft_lane> self(new raft_lane(part, ex, links, host, std::move(opts)));
  const cluster::cluster_options& o = self->opts_.cluster;
  const std::uint32_t lane = self->opts_.lane;
  const std::string& data_dir = self->opts_.data_dir;
  const std::string raft_dir = raft_lane::raft_dir(data_dir, lane);
  if (auto st = env.create_dirs(raft_dir); !st) return st.err();
  // Before raft restores or applies anything: places in this lane's node log are durable.
  part.set_node_log_core(node_log_core(lane, o.lanes));
  cluster::replicator::options ro;
  ro.self = o.node_id;
  for (const auto& [id, addr] : o.peers) ro.addresses.emplace(id, address_of(addr));
  ro.groups = o.groups;
  ro.lane = lane;
  ro.lanes = o.lanes;
  ro.balance_leaders = o.balance_leaders;
  ro.election_timeout_ms = o.election_timeout_ms;
  ro.heartbeat_ms = o.heartbeat_ms();
  ro.log_path = raft_dir + "/" + node_log_name;
  ro.prepare_log_segments = self->opts_.prepare_log_segments;
  ro.log_segment_bytes = o.log_segment_bytes;
  ro.keep_log_segment = [p = self.get()](std::uint32_t segment) { return p->keep_log_segment(segment); };
  ro.join = o.join;
  ro.members_path = storage::join_path(data_dir + "/raft", std::string(cluster::members_file_name));
  cluster::replicator::callbacks cb;
  raft_lane* p = self.get();
  cb.apply = [p](std::uint32_t g, std::uint64_t index, cluster::entry_kind kind, std::span<const std::byte> c,
                 std::uint64_t ticket,
                 const cluster::command_place* place) { p->apply(g, index, kind, c, ticket, place); };
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
    tier::data_log* d = p->part_.data();
    if (d == nullptr || d->unsynced_bytes() <= limit) return false;
    d->sync_now();
    return true;
  };
  cb.restore = [p](std::uint32_t g, std::uint64_t index, std::span<const std::byte> state) {
    return p->restore_snapshot(g, index, state);
  };
  cb.log_failed = [p](const error& e) { p->host_.fail("the raft node log failed: " + e.reason); };
  if (self->opts_.adjust) self->opts_.adjust(ro);
  // A fork's read waits for its source's group as long as a read waits for its read index.
  self->applied_ = std::make_unique<cluster::applied_waits>(ex, o.groups, ro.read_timeout);
  auto repl = cluster::replicator::open(ex, std::move(flusher), env, links, std::move(ro), std::move(cb));
  if (!repl) return repl.err();
  self->repl_ = std::move(*repl);
  self->open_node_log_places();
  self->open_snapshot_transfers();
  self->open_fork_sweep();
  return self;
}

std::string raft_lane::raft_dir(const std::string& data_dir, std::uint32_t lane) {
  return lane == 0 ? data_dir + "/raft" : data_dir + "/raft/lane-" + std::to_string(lane);
}

std::unique_ptr<storage::segment_reader> raft_lane::node_log_reader(storage::env& e,
                                                                    const std::string& data_dir,
                                                                    std::uint32_t lane) {
  static const raft::node_log_framing framing(node_log_name);
  return std::make_unique<storage::segment_reader>(e, raft_dir(data_dir, lane),
                                                   storage::segment_reader_options{}, framing);
}

raft_lane::~raft_lane() {
  repl_.reset();  // before the transfers its node_io calls
  transfers_.reset();
  applied_.reset();
}

const snapshot_transfer_stats& raft_lane::transfer_stats() const {
  return transfers_->stats();
}

void raft_lane::open_snapshot_transfers() {
  raft::node_io& io = repl_->io();
  snapshot_transfers::ports p;
  p.send_chunk = [&io](raft::node_id to, raft::group_id g, raft::wire::snapshot_chunk c) {
    io.send_chunk(to, g, std::move(c));
  };
  p.send_ack = [&io](raft::node_id to, raft::group_id g, raft::wire::snapshot_chunk_ack a) {
    io.send_chunk_ack(to, g, a);
  };
  p.send_install = [&io](const snapshot_transfers::install& s) { return io.send_install(s); };
  p.deliver = [&io](const snapshot_transfers::install& s) { return io.deliver_install(s); };
  p.read = [this](std::vector<snapshot_transfers::piece_read> pieces, snapshot_transfers::read_done done) {
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
    auto back = [done = std::move(done), n = pieces.size()](streams::read_plan got, status st) {
      if (!st) return done(st.err());
      std::vector<std::string> out;
      for (const auto& s : got.slices) out.emplace_back(s.view());
      if (out.size() != n) return done(make_error(storage::errc::io_error, "short read"));
      done(std::move(out));
    };
    if (opts_.read_slices) return opts_.read_slices(std::move(plan), std::move(back));
    part_.read_slices(std::move(plan), std::move(back));
  };
  p.write = [this](std::uint64_t transfer, std::string bytes, tier::data_log::raw_done done) {
    if (tier::data_log* d = part_.data()) return d->write_raw(transfer, std::move(bytes), std::move(done));
    ex_.post([done = std::move(done)] {
      done(make_error(storage::errc::invalid_argument, "this node has no data log"));
    });
  };
  p.unpin = [this](std::uint64_t transfer) {
    if (tier::data_log* d = part_.data()) d->unpin_transfer(transfer);
  };
  p.when_durable = [this](const streams::disk_location& at, std::function<void()> fn) {
    if (tier::data_log* d = part_.data()) d->when_durable(at, std::move(fn));
  };
  p.state_offset = [](std::span<const std::byte> data) {
    return cluster::replicator::snapshot_state_offset(data);
  };
  snapshot_transfers::options o;
  o.first_id = opts_.first_transfer_id;
  if (o.first_id == 0)
    o.first_id = ((std::uint64_t(std::random_device{}()) << 32 | std::random_device{}()) >> 1) | 1;
  transfers_ = std::make_unique<snapshot_transfers>(ex_, std::move(p), o);
  io.set_snapshot_transfers(transfers_.get());
}

std::uint32_t raft_lane::subscription_group_of(std::string_view key) const {
  // Lane 0's groups are 0, L, 2L, ...: ceil(groups / L) of them.
  const std::uint32_t lanes = opts_.cluster.lanes;
  return cluster_group_of(key, (opts_.cluster.groups + lanes - 1) / lanes) * lanes;
}

void raft_lane::connect_lanes(const std::vector<raft_lane*>& lanes) {
  std::vector<cluster::replicator::lane_port> ports;
  for (raft_lane* r : lanes) {
    r->lanes_ = lanes;
    ports.push_back({r->repl_.get(),
                     [r](std::function<void()> fn) { r->host_.post_to_lane(r->opts_.lane, std::move(fn)); }});
  }
  cluster::replicator::connect_lanes(ports);
}

void raft_lane::on_lane(raft_lane& r, std::function<void()> fn) {
  if (&r == this) return fn();
  host_.post_to_lane(r.opts_.lane, std::move(fn));
}

streams::state_machine::path_predicate raft_lane::in_group(std::uint32_t group) const {
  return [group, groups = opts_.cluster.groups](std::string_view path) {
    return cluster_group_of(path, groups) == group;
  };
}

result<std::vector<std::byte>> raft_lane::take_snapshot(std::uint32_t group, std::uint64_t index) {
  place_set places;  // the segments the snapshot references
  auto streams = part_.machine().snapshot_part(in_group(group), [&](const streams::disk_location& at) {
    if (!part_.data_durable(at)) return false;
    places.emplace(at.core, at.segment);
    return true;
  });
  if (!streams) return streams.err();
  const std::vector<std::byte> subs =
      subscriptions_ != nullptr ? subscriptions_->snapshot_part(group) : std::vector<std::byte>{};
  // Object references, not bytes: records whose bytes are only in objects are not in the streams part
  // (memory_log::held_from), the cold index's part says where they are.
  const tier::cold_index cold_part = part_.cold_index().part(in_group(group));
  const std::vector<std::byte> cold = cold_part.streams() > 0 ? cold_part.encode() : std::vector<std::byte>{};
  // Pinned from now on: a snapshot that does not become durable leaves the previous one in the node
  // log, whose references the state still holds or a later snapshot pinned (docs/replication.md).
  pin_places(group, places);
  log::debug(
      "weir cluster: group {} snapshot at {}: {} bytes of streams, {} of subscriptions, {} of cold index",
      group, index, streams->size(), subs.size(), cold.size());
  return encode_group_snapshot(*streams, subs, cold);
}

namespace {
// The data log's pins of restore snapshots being built, apart from the groups' own snapshots' pins.
constexpr std::uint32_t bucket_pin = 1u << 31;
}  // namespace

result<raft_lane::bucket_cut> raft_lane::cut_for_bucket(std::uint32_t group) {
  auto term = repl_->leader_term(group);
  if (!term)
    return make_error(errc::cluster_unavailable, "this node does not lead group " + std::to_string(group));
  place_set places;
  auto streams = part_.machine().snapshot_part(in_group(group), [&](const streams::disk_location& at) {
    places.emplace(at.core, at.segment);
    return true;
  });
  if (!streams) return streams.err();
  pin_places(bucket_pin | group, places);
  bucket_cut cut;
  cut.index = repl_->applied_index(group);
  cut.term = *term;
  cut.streams = std::move(*streams);
  if (subscriptions_ != nullptr) cut.subscriptions = subscriptions_->snapshot_part(group);
  const tier::cold_index cold_part = part_.cold_index().part(in_group(group));
  if (cold_part.streams() > 0) cut.cold = cold_part.encode();
  cut.object_keys = cold_part.object_keys();
  return cut;
}

void raft_lane::release_bucket_cut(std::uint32_t group) {
  pin_places(bucket_pin | group, {});
}

status raft_lane::restore_snapshot(std::uint32_t group, std::uint64_t index,
                                   std::span<const std::byte> state) {
  auto parts = decode_group_snapshot(state);
  if (!parts) return parts.err();
  tier::cold_index cold;  // none: the group has no bytes in objects (a stale part here is dropped)
  if (!parts->cold.empty()) {
    auto decoded = tier::cold_index::decode(parts->cold);
    if (!decoded) return decoded.err();
    cold = std::move(*decoded);
  }
  if (auto st = restore_part(parts->streams, in_group(group)); !st) return st;
  part_.cold_index().replace_part(in_group(group), cold);
  part_.recount_cold();
  // What the snapshot references stays on disk until the group's next snapshot, as when it was taken:
  // this node may send it to a peer (a transfer reads every record) after the state moved on. The
  // segments are this lane's data log's (its partition's core) and node log's, not lane 0's.
  place_set places;
  for (const std::uint32_t core : {part_.options().core, node_core()}) {
    for (std::uint64_t s : part_.machine().referenced_segments(core, in_group(group)))
      places.emplace(core, s);
  }
  pin_places(group, places);
  // A snapshot that came in a transfer: its copies are pinned through the state from now on.
  if (transfers_) transfers_->restored(raft::group_id(group));
  if (subscriptions_ != nullptr) {
    if (auto st = subscriptions_->restore_part(group, parts->subscriptions); !st) return st;
  }
  applied_->applied(group, index);
  log::info("weir cluster: group {} restored from its snapshot at {} ({} bytes)", group, index, state.size());
  return {};
}

streams::outcome raft_lane::submit(const streams::command& c, completion done) {
  streams::encode_into(c, scratch_);
  const std::uint32_t g = group_of(streams::command_path(c));
  const std::uint64_t ticket =
      repl_->submit(g, std::as_bytes(std::span<const char>(scratch_.data(), scratch_.size())));
  waiting_.emplace(ticket, waiter{std::move(done), {}, {}, scratch_.size()});
  in_flight_bytes_ += scratch_.size();
  return {};
}

void raft_lane::prepare_read(const std::string& path, std::int64_t,
                             std::function<void(errc, streams::errc)> ready) {
  linearize(std::string_view(path), [this, path, ready = std::move(ready)](bool ok) mutable {
    if (!ok) return ready(errc::cluster_unavailable, streams::errc::ok);
    const std::int64_t now = part_.now_ms();
    streams::read_result head = part_.machine().head(path, now);
    if (head.code != streams::errc::ok) return ready(errc::ok, head.code);
    if (!head.meta->expiry.ttl_seconds) return ready(errc::ok, streams::errc::ok);
    // A sliding TTL: the renewal is a command like any other, replicated before the read is served.
    (void)submit(streams::touch_command{path, now},
                 [ready = std::move(ready)](durable_result& r) { ready(r.failure, r.o.code); });
  });
}

void raft_lane::linearize(std::string_view path, std::function<void(bool)> ready) {
  repl_->read_index(group_of(path),
                    [this, path = std::string(path), ready = std::move(ready)](bool ok) mutable {
                      if (!ok) return ready(false);
                      wait_for_sources(std::move(path), std::move(ready));
                    });
}

void raft_lane::wait_for_sources(std::string path, std::function<void(bool)> ready) {
  // Most reads are of streams that are not forks (or forks made before origins were recorded).
  auto w = part_.machine().fork_wait_of(path);
  if (!w) return ready(true);
  // One link at a time, on the lane of the source's group (the source lives there): the source's own
  // origin is known there only once its group applied its create, which this wait covers (the fork's
  // retain came after the source's create). The answer comes back lane by lane.
  raft_lane& there = lane_of_group(w->origin.group);
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

void raft_lane::submit_entry(std::uint32_t group, std::span<const std::byte> payload, bool here_only,
                             std::function<void(bool)> done) {
  waiter w;
  w.entry_done = std::move(done);
  propose(group, payload, cluster::entry_kind::subscriptions, here_only, std::move(w));
}

void raft_lane::propose(std::uint32_t group, std::span<const std::byte> payload, cluster::entry_kind kind,
                        bool here_only, waiter w) {
  const std::uint64_t ticket = repl_->submit(group, payload, kind, here_only);
  w.bytes = payload.size();
  waiting_.emplace(ticket, std::move(w));
  in_flight_bytes_ += payload.size();
}

std::vector<std::uint32_t> raft_lane::groups() const {
  std::vector<std::uint32_t> out;
  for (std::uint32_t g = opts_.lane; g < opts_.cluster.groups; g += opts_.cluster.lanes) out.push_back(g);
  return out;
}

void raft_lane::record(std::uint32_t group, std::vector<std::byte> record, recorded done) {
  waiter w;
  w.record_done = std::move(done);
  propose(group, record, cluster::entry_kind::cold_index, /*here_only=*/true, std::move(w));
}

void raft_lane::apply(std::uint32_t group, std::uint64_t index, cluster::entry_kind kind,
                      std::span<const std::byte> bytes, std::uint64_t ticket,
                      const cluster::command_place* place) {
  // Reads of forks waiting for this group go on once this apply returned (applied_waits posts them).
  applied_->applied(group, index);
  if (kind == cluster::entry_kind::cold_index) {
    // Every node, in log order, against the same state: the same ranges apply everywhere, and a deposed
    // leader's late record is checked like any other (tier::cold_index::apply).
    auto applied = part_.apply_index_entry(bytes);
    if (!applied) {
      log::error("weir cluster: group {} entry {}: an index record that does not apply ({}); skipped", group,
                 index, applied.err().reason);
    }
    if (ticket == 0) return;
    if (auto it = waiting_.find(ticket); it != waiting_.end())
      finish(it, durable_result{}, std::move(applied));
    return;
  }
  if (kind == cluster::entry_kind::subscriptions) {
    if (subscriptions_ != nullptr) subscriptions_->apply(group, bytes);
    if (ticket == 0) return;
    if (auto it = waiting_.find(ticket); it != waiting_.end()) finish(it, durable_result{});
    return;
  }
  std::uint32_t data_offset = 0;
  auto c = streams::decode(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                           &data_offset);
  durable_result r;
  if (!c) {
    // The same bytes fail on every node: the command is skipped everywhere alike.
    log::error("weir cluster: group {} entry {}: undecodable command ({}); skipped", group, index,
               c.err().reason);
    r.failure = errc::storage_unavailable;
  } else {
    // The node that proposed it (and waits for it here, in this run) proposes the fork releases it
    // causes: one node, once, not every node nor every replay.
    const bool proposed_here = ticket != 0 && waiting_.contains(ticket);
    // A retain's outcome carries its place (set_entry_place): the fork's create records it
    // (fork_resolution::origin), and every node reads the fork only once this group applied this far.
    // The record's bytes stay where the node log has them (synced: a node applies only what it stored).
    std::optional<streams::disk_location> stored;
    if (place != nullptr && data_offset != 0) {
      stored = streams::disk_location{place->segment, place->record_offset, node_core(),
                                      place->offset + data_offset};
    }
    r.o = apply_committed(*c, group, index, proposed_here, stored ? &*stored : nullptr);
  }
  if (ticket == 0) return;
  auto it = waiting_.find(ticket);
  if (it == waiting_.end()) return;
  // Answer after the current apply returns (the answer may propose more: a fork's create after its retain).
  finish(it, std::move(r));
}

void raft_lane::finish(waiter_map::iterator it, durable_result r,
                       std::optional<result<tier::cold_apply_result>> applied) {
  in_flight_bytes_ -= it->second.bytes;
  host_.on_in_flight_down();  // writes waiting for admission (they propose: never inside libraft)
  if (it->second.record_done) {
    if (!applied) {
      applied =
          make_error(r.failure, std::string("the index record did not commit here: ") + errc_name(r.failure));
    }
    ex_.post([done = std::move(it->second.record_done), a = std::move(*applied)] { done(a); });
    waiting_.erase(it);
    return;
  }
  if (it->second.entry_done) {
    ex_.post([done = std::move(it->second.entry_done), ok = r.failure == errc::ok] { done(ok); });
    waiting_.erase(it);
    return;
  }
  ex_.post([done = std::move(it->second.done), r = std::move(r)]() mutable {
    if (done) done(r);
  });
  waiting_.erase(it);
}

void raft_lane::failed(std::uint64_t ticket, cluster::submit_error e) {
  auto it = waiting_.find(ticket);
  if (it == waiting_.end()) return;
  durable_result r;
  r.failure =
      e == cluster::submit_error::no_leader ? errc::cluster_unavailable : errc::cluster_outcome_unknown;
  finish(it, std::move(r));
}

}  // namespace weir::replica
