#include "replica/cluster_cold_snapshots.h"

#include <algorithm>

#include "base/log.h"
#include "replica/errc.h"
#include "replica/group_snapshot.h"
#include "replica/raft_lane.h"

namespace weir::replica {

cluster_cold_snapshots::cluster_cold_snapshots(raft_lane& lane, cluster_cold_snapshot_options o,
                                               cold_snapshot_io io)
    : lane_(lane), ex_(lane.part().executor()), o_(o), io_(std::move(io)) {}

cluster_cold_snapshots::~cluster_cold_snapshots() {
  *alive_ = false;
  stop();
}

void cluster_cold_snapshots::start() {
  arm();
}

void cluster_cold_snapshots::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (timer_ != 0) ex_.cancel_timer(timer_);
  timer_ = 0;
}

void cluster_cold_snapshots::arm() {
  if (stopped_) return;
  timer_ = ex_.add_timer(o_.interval, [this] {
    timer_ = 0;
    take();
    arm();
  });
}

bool cluster_cold_snapshots::names(std::uint32_t group, std::string_view key) const {
  auto own = own_newest_term_.find(group);
  if (own == own_newest_term_.end() || own->second == 0 || lane_.leader_term(group) != own->second)
    return true;
  auto named = named_.find(group);
  if (named == named_.end()) return false;
  for (const auto& [snapshot, keys] : named->second) {
    if (keys.find(key) != keys.end()) return true;
  }
  return false;
}

std::optional<std::uint32_t> cluster_cold_snapshots::next_due(std::uint32_t from) const {
  for (std::uint32_t g : lane_.groups()) {
    if (g < from || !lane_.leader_term(g)) continue;
    auto last = last_index_.find(g);
    if (last == last_index_.end() || last->second != lane_.applied_index(g)) return g;
  }
  return std::nullopt;
}

void cluster_cold_snapshots::take() {
  if (stopped_ || busy_) return;
  if (auto g = next_due(0)) snapshot_group(*g);
}

void cluster_cold_snapshots::next(std::uint32_t group) {
  busy_ = false;
  if (stopped_) return;
  if (auto g = next_due(group + 1)) snapshot_group(*g);
}

void cluster_cold_snapshots::snapshot_group(std::uint32_t group) {
  busy_ = true;
  auto cut = lane_.cut_for_bucket(group);
  if (!cut) return fail(group, "no cut of the state: " + cut.err().reason);
  partition& part = lane_.part();
  // Taken on the loop, at the cut: which streams forget what (their bytes are in objects).
  cut_inlining inlining =
      cut_inlining::from(part, [&](const std::string& path) { return lane_.group_of(path) == group; });
  tier::restore_snapshot_header h;
  h.epoch = o_.epoch;
  h.group = tier::cold_group(group);
  h.groups = o_.groups;
  h.lsn = cut->index;
  h.taken_at_ms = part.now_ms();
  const tier::object_name name{o_.epoch, tier::cold_group(group), tier::leader_term(cut->term),
                               tier::upload_seq(seq_[{group, cut->term}]++)};
  const std::uint64_t max_bytes = o_.max_bytes;
  const std::uint64_t part_bytes = o_.part_bytes;
  // Named from now: the sweep keeps its objects while it may land.
  string_set& keys = named_[group][tier::snapshot_key(name)];
  for (std::string& k : cut->object_keys) keys.insert(std::move(k));
  std::weak_ptr<bool> alive = alive_;
  io_.off_loop(
      [cut = std::move(*cut), inlining = std::move(inlining), h, max_bytes,
       part_bytes]() -> cold_snapshot_io::built {
        auto streams = streams::inline_snapshot_part(
            cut.streams, [&](const std::string& path) { return inlining.forget_before(path); },
            inlining.bounded_reader(max_bytes));
        if (!streams) return streams.err();
        return restore_snapshot_objects(h, encode_group_snapshot(*streams, cut.subscriptions, cut.cold),
                                        max_bytes, part_bytes);
      },
      [this, alive, group, name, index = h.lsn, taken = h.taken_at_ms](cold_snapshot_io::built b) mutable {
        if (auto a = alive.lock(); !a || !*a) return;
        lane_.release_bucket_cut(group);
        if (stopped_) return;
        if (!b) {
          if (b.err().is<errc>() && b.err().code == static_cast<int>(errc::cold_backlogged))
            ++stats_.too_large;
          return fail(group, b.err().reason);
        }
        const std::uint64_t size = b->bytes();
        const std::uint64_t parts = b->parts.size();
        put_restore_snapshot(
            io_.put, name, std::move(*b),
            [this, alive] {
              auto a = alive.lock();
              return a && *a && !stopped_;
            },
            [this, group, index, taken, size, parts](std::string failure) {
              if (!failure.empty()) return fail(group, "uploading " + failure);
              uploaded(group, index, taken, size, parts);
            });
      });
}

void cluster_cold_snapshots::uploaded(std::uint32_t group, std::uint64_t index, std::int64_t taken_ms,
                                      std::uint64_t size, std::uint64_t parts) {
  last_index_[group] = index;
  stats_.landed(size, parts, index, taken_ms);
  prune(group);
}

void cluster_cold_snapshots::prune(std::uint32_t group) {
  std::weak_ptr<bool> alive = alive_;
  io_.list(tier::snapshot_key_prefix(o_.epoch, tier::cold_group(group)), "",
           tier::object_store::max_list_keys, [this, alive, group](tier::store_result<tier::list_page> page) {
             if (auto a = alive.lock(); !a || !*a) return;
             if (page) {
               std::vector<std::string> keys;
               for (const auto& o : page->objects) keys.push_back(o.key);
               const snapshot_pruning p = prune_snapshot_keys(std::move(keys), 1);
               const std::string newest = p.kept.empty() ? std::string() : p.kept.back();
               // Ours and no longer the newest: their names go. The newest ours: names() is exact.
               auto& named = named_[group];
               for (auto it = named.begin(); it != named.end();) {
                 it = it->first == newest ? std::next(it) : named.erase(it);
               }
               auto newest_name = tier::parse_snapshot_key(newest);
               own_newest_term_[group] =
                   named.contains(newest) && newest_name ? newest_name->term.value() : 0;
               for (const std::string& key : p.drop) {
                 io_.remove(key, [this, alive, key](tier::store_result<tier::store_done> r) {
                   if (auto a = alive.lock(); !a || !*a) return;
                   if (r) {
                     ++stats_.deleted;
                   } else {
                     log::warn("weir cluster: cold tier: deleting the restore snapshot object {}: {}", key,
                               r.err().describe());
                   }
                 });
               }
             } else {
               log::warn("weir cluster: cold tier: listing the restore snapshots of group {}: {}", group,
                         page.err().describe());
             }
             next(group);
           });
}

void cluster_cold_snapshots::fail(std::uint32_t group, std::string why) {
  ++stats_.failed;
  if (why != stats_.last_error)
    log::warn("weir cluster: cold tier: restore snapshot of group {}: {}", group, why);
  stats_.last_error = std::move(why);
  next(group);
}

}  // namespace weir::replica
