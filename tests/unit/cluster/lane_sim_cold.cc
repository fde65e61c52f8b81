// The lane simulation's cold tier (lane_sim.h, invariant 8): every node's partitions get a cold_mover as
// a cluster node's do (node::open_cold, a lane's groups: each group's leader uploads under its raft term,
// index records are raft entries every node applies), over one bucket that all nodes share. The bucket's
// answers come later on the node's executor (as object_store_workers post them to a loop): a node that
// goes down first never hears them. At the end, with the movers stopped and every entry applied, every
// node's index must hold the same extents, and the bucket the streams' bytes under them (the groups'
// sweeps, which delete what no index names, must not have taken any of them), each group's newest
// restore snapshot must be whole (its parts in the bucket, each as its head names it), and each mover's
// counts of local and held bytes must be what counting every stream afresh gives.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "replica/cluster_cold_snapshots.h"
#include "replica/cold_mover.h"
#include "replica/group_snapshot.h"
#include "tier/restore_snapshot.h"
#include "unit/cluster/lane_sim_model.h"

namespace weir::cluster::sim {

using std::chrono::milliseconds;

namespace {
// The objects of a restore snapshot here: small, so that most go up in parts (a head after its parts),
// under the bucket's faults and the nodes' crashes, and the end's check joins them.
constexpr std::uint64_t snapshot_part_bytes = 512;
}  // namespace

void lane_sim::attach_cold(sim_node& n) {
  if (!store_) {
    store_ = std::make_unique<tier::mem_object_store>();
    if (o_.cold_store_faults > 0) store_->set_random_faults(o_.cold_store_faults, sched_.rng()());
    fetcher_ = std::make_unique<tier::cold_fetcher>(*store_);
  }
  n.fetcher = std::make_unique<tier::cold_fetcher>(*store_);
  raft::sim_executor* ex = n.ex.get();
  auto delay = [this] { return milliseconds(sched_.uniform(1, o_.cold_store_max_ms)); };
  for (std::size_t l = 0; l < n.parts.size(); ++l) {
    replica::cold_mover_options o;
    o.groups = n.lanes[l].get();
    o.upload.target_object_bytes = o_.cold_object_bytes;
    o.upload.max_age = milliseconds(o_.cold_max_age_ms);
    o.upload.block_size = o_.cold_block_bytes;
    o.upload.retry_base = milliseconds(50);
    o.upload.retry_max = milliseconds(400);
    o.scan_interval = milliseconds(o_.cold_scan_ms);
    // Scaled to the small objects: a stream takes several reads, appends start turns between passes,
    // turns are cut short, and a group's uploader fills up (streams wait for an object to land).
    o.scan_bytes = 64;
    o.feed_after_bytes = 256;
    o.turn_bytes = 512;
    o.max_waiting_bytes = 4 * o_.cold_object_bytes;
    o.keep_bytes = o_.cold_keep_bytes;
    // Each group's leader sweeps its group's orphans and the objects of deleted streams, with a short
    // grace: an object a node's index still names must never go (check_cold reads every extent back).
    o.sweep.grace = milliseconds(300);
    o.sweep.interval = milliseconds(200);
    o.sweep.page_keys = 7;  // several pages per sweep
    o.sweep.list = [this, ex, delay](std::string prefix, std::string token, int max_keys,
                                     replica::cold_sweeper_options::list_done done) {
      ex->add_timer(delay(),
                    [this, prefix = std::move(prefix), token = std::move(token), max_keys,
                     done = std::move(done)]() mutable { done(store_->list(prefix, token, max_keys)); });
    };
    o.sweep.remove = [this, ex, delay](std::string key, replica::cold_sweeper_options::remove_done done) {
      ex->add_timer(delay(), [this, key = std::move(key), done = std::move(done)]() mutable {
        auto r = store_->remove(key);
        if (r) ++report_.cold_deleted;
        done(std::move(r));
      });
    };
    // The request reaches the bucket after a while (a process that died first never sent it); one key
    // is never put again with other bytes (docs/cold-tier.md, "Keys").
    const tier::uploader::put_fn put = [this, ex, delay, id = n.id](std::string key,
                                                                    tier::shared_object_bytes bytes,
                                                                    tier::uploader::put_done done) {
      ex->add_timer(delay(), [this, id, key = std::move(key), bytes = std::move(bytes),
                              done = std::move(done)]() mutable {
        if (auto had = store_->contents(key); had && *had != *bytes)
          fail(fmt::format("node {} puts {} again with other bytes ({} bytes, {} before)", id, key,
                           bytes->size(), had->size()));
        auto r = store_->put(key, *bytes);
        bytes.reset();  // as the workers do: the uploader may reuse the buffer once it alone holds it
        if (r) ++report_.cold_puts;
        done(std::move(r));
      });
    };
    n.parts[l]->attach_object_reads([ex, delay, fetcher = n.fetcher.get()](
                                        std::string key, std::uint64_t size, std::uint64_t position,
                                        std::uint64_t length, replica::partition::object_done done) {
      ex->add_timer(
          delay(), [fetcher, key = std::move(key), size, position, length, done = std::move(done)]() mutable {
            done(fetcher->read(key, size, position, length));
          });
    });
    // A fork's inherited bytes in objects, its source on another lane: that lane's index places them, as
    // the node asks it (server/node_cold.cc).
    n.parts[l]->attach_foreign_objects([this, &n, ex](std::string stream, streams::stream_offset from,
                                                      replica::partition::located_fn done) {
      ++report_.foreign_locates;
      ex->post([&n, ex, stream = std::move(stream), from, done = std::move(done)]() mutable {
        auto where = n.part(stream).locate_objects(stream, from);
        ex->post([done = std::move(done), where = std::move(where)]() mutable { done(std::move(where)); });
      });
    });
    // Each group's leader uploads restore snapshots; a kept one's objects stay (the sweep asks it).
    replica::partition* part = n.parts[l].get();
    o.sweep.in_snapshot = [part](std::string_view key) {
      const replica::cluster_cold_snapshots* sn = part->cluster_snapshots();
      auto name = tier::parse_object_key(key);
      return sn == nullptr || !name || sn->names(name->group.value(), key);
    };
    replica::cold_snapshot_io io;
    io.off_loop = [ex, delay](std::function<replica::cold_snapshot_io::built()> job,
                              std::function<void(replica::cold_snapshot_io::built)> done) {
      ex->add_timer(delay(), [job = std::move(job), done = std::move(done)] { done(job()); });
    };
    io.put = put;
    io.list = o.sweep.list;
    io.remove = o.sweep.remove;
    replica::cluster_cold_snapshot_options so;
    so.groups = o_.groups;
    so.interval = milliseconds(300);
    so.part_bytes = snapshot_part_bytes;  // most snapshots go up in parts
    // No budget of bytes not in the bucket: appends are never refused for it here.
    n.parts[l]->attach_cold(o, put, 0);
    n.parts[l]->attach_cluster_snapshots(
        std::make_unique<replica::cluster_cold_snapshots>(*n.lanes[l], so, std::move(io)));
  }
}

void lane_sim::count_cold(sim_node& n) {
  for (const auto& part : n.parts) {
    if (const replica::cluster_cold_snapshots* sn = part->cluster_snapshots())
      report_.cold_snapshots += sn->stats().uploaded;
    if (const replica::cold_mover* m = part->mover()) {
      report_.cold_objects += m->stats().objects;
      report_.cold_forgotten += m->stats().forgotten_bytes;
      report_.cold_reclaims += m->stats().reclaims;
    }
    report_.object_reads += part->bucket_reads();
    report_.object_read_failures += part->bucket_read_failures();
  }
}

// After check_final (finals_ hold every stream's bytes, the same on every node).
void lane_sim::check_cold() {
  // No more uploads; then every node applies every entry proposed before (index records in flight).
  for (auto& n : nodes_)
    for (auto& part : n->parts) {
      part->mover()->stop();
      part->stop();  // the restore snapshots too
    }
  auto settled = [this] {
    std::vector<std::vector<replicator::group_status>> st;
    for (const auto& n : nodes_) {
      if (!n->up) return false;
      st.push_back(n->status());
    }
    for (std::size_t g = 0; g < st[0].size(); ++g) {
      if (st[0][g].leader == 0) return false;
      for (const auto& s : st)
        if (s[g].applied_index != s[g].commit_index || s[g].commit_index != st[0][g].commit_index ||
            s[g].last_index != s[g].commit_index)
          return false;
    }
    return true;
  };
  const std::int64_t limit = sched_.now_ms() + 10000;
  while (report_.ok && !settled() && sched_.now_ms() < limit && sched_.run_one()) {
  }
  if (!report_.ok) return;
  if (!settled()) return fail("the cold tier's index records did not settle within 10 s of the movers' stop");
  // Each mover's counts, kept up to date change by change (never walking every stream at a pass), are
  // what counting every stream afresh gives: bytes not in an object, and bytes held on this node.
  for (const auto& n : nodes_) {
    for (const auto& part : n->parts) {
      const streams::state_machine& sm = part->machine();
      std::uint64_t local = 0;
      std::uint64_t held = 0;
      for (const streams::stream_meta& m : sm.list("", part->now_ms())) {
        auto log = sm.log_of(m.path);
        const std::uint64_t first = part->cold_index().cold_end(m.path).value_or(log->base()).value();
        local += log->tail().value() - first;
        held += log->tail().value() - log->held_from().value();
      }
      const replica::cold_mover_stats& st = part->mover()->stats();
      if (st.local_bytes != local || st.held_bytes != held)
        return fail(
            fmt::format("node {} core {}: the mover counts {} bytes local and {} held, a count afresh "
                        "{} and {}",
                        n->id, part->options().core, st.local_bytes, st.held_bytes, local, held));
    }
  }
  store_->clear_faults();
  // The newest restore snapshot of each group decodes (header, group snapshot, cold index) and every
  // object it names is in the bucket: a restore from it would read them. (The simulation deletes no
  // streams, so its sweeps never meet an object only a snapshot names: that protection,
  // cluster_cold_snapshots::names, is not put to the test here.)
  std::map<std::uint32_t, std::string> newest;
  for (const std::string& key : store_->keys()) {
    if (auto name = tier::parse_snapshot_key(key))
      newest[name->group.value()] = std::max(newest[name->group.value()], key);
  }
  for (const auto& [group, key] : newest) {
    auto joined = tier::read_restore_snapshot(*store_, key);
    if (!joined) return fail(fmt::format("restore snapshot {}: {}", key, joined.err().reason));
    report_.cold_snapshot_parts += tier::decode_restore_snapshot(*store_->contents(key))->parts.size();
    const tier::object_bytes snapshot = std::move(*joined);  // the views below point into it
    auto v = tier::decode_restore_snapshot(snapshot);
    if (!v) return fail(fmt::format("restore snapshot {}: {}", key, v.err().reason));
    auto parts = replica::decode_group_snapshot(v->state);
    if (!parts) return fail(fmt::format("restore snapshot {}: {}", key, parts.err().reason));
    if (parts->cold.empty()) continue;
    auto index = tier::cold_index::decode(parts->cold);
    if (!index) return fail(fmt::format("restore snapshot {}: {}", key, index.err().reason));
    for (const std::string& object : index->object_keys()) {
      if (!store_->contents(object))
        return fail(fmt::format("restore snapshot {} names {}, which a sweep deleted", key, object));
      ++report_.cold_snapshot_objects;
    }
  }
  using extent = std::tuple<std::uint64_t, std::uint64_t, std::string, std::uint64_t, std::uint64_t>;
  for (int s = 0; s < all_streams(); ++s) {
    const std::string path = path_of(s);
    const std::string& content = finals_[0][static_cast<std::size_t>(s)]->content;
    // Where the stream's own bytes begin: a fork's (never appended to) after what it inherits.
    const std::uint64_t base = is_fork(s) ? content.size() : 0;
    std::vector<extent> first;
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      sim_node& n = *nodes_[k];
      const tier::cold_index& index = n.part(path).cold_index();
      std::vector<extent> ext;
      const auto end = index.cold_end(path);
      if (end && end->value() > content.size())
        return fail(fmt::format("node {}: stream {}'s cold end {} is past its {} bytes", n.id, s,
                                end->value(), content.size()));
      for (std::uint64_t at = base; end && at < end->value();) {
        const auto where = index.find(path, streams::stream_offset(at));
        if (!where || where->extent->first.value() != at || where->extent->end.value() <= at)
          return fail(fmt::format("node {}: stream {} has no extent starting at {} (cold end {})", n.id, s,
                                  at, end->value()));
        ext.emplace_back(at, where->extent->end.value(), where->object->key, where->object->size,
                         where->extent->data_position);
        at = where->extent->end.value();
      }
      report_.cold_extents += ext.size();
      if (k == 0) {
        first = std::move(ext);
      } else if (ext != first) {
        const auto cold = [](const std::vector<extent>& e) { return e.empty() ? 0 : std::get<1>(e.back()); };
        return fail(
            fmt::format("stream {}: node {}'s cold index has {} extents up to {}, node {}'s {} up to {} "
                        "(other objects or "
                        "offsets)",
                        s, n.id, ext.size(), cold(ext), nodes_[0]->id, first.size(), cold(first)));
      }
    }
    // The bucket holds the stream's bytes under every extent.
    for (const auto& [from, to, key, size, position] : first) {
      auto got = fetcher_->read(key, size, position, to - from);
      if (!got)
        return fail(fmt::format("stream {}: bytes {}..{} in {} cannot be read: {}", s, from, to, key,
                                got.err().describe()));
      const std::string bytes(reinterpret_cast<const char*>(got->data()), got->size());
      if (bytes != content.substr(from, to - from))
        return fail(fmt::format("stream {}: bytes {}..{} in {} (at {}) are not the stream's", s, from, to,
                                key, position));
    }
  }
}

}  // namespace weir::cluster::sim
