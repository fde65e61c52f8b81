#include "replica/cold_snapshots.h"

#include <algorithm>
#include <unordered_map>

#include "base/log.h"
#include "replica/cold_mover.h"
#include "replica/cold_state.h"
#include "replica/errc.h"
#include "tier/restore_snapshot.h"

namespace weir::replica {

cut_inlining cut_inlining::from(partition& p, const std::function<bool(const std::string&)>& keep) {
  cut_inlining out;
  for (auto& [path, end] : p.forgettable_cold()) {
    if (!keep || keep(path)) out.forget.emplace(std::move(path), end);
  }
  out.readers = p.hot().readers();
  return out;
}

std::optional<streams::stream_offset> cut_inlining::forget_before(const std::string& path) const {
  auto it = forget.find(path);
  if (it == forget.end()) return std::nullopt;
  return it->second;
}

result<streams::chunk> cut_inlining::read(const streams::part_reference& r) const {
  streams::chunk_slice s;
  s.at = r.at;
  s.begin = r.begin;
  s.size = r.size;
  return tier::hot_tier::load(readers, s);
}

std::function<result<streams::chunk>(const streams::part_reference&)> cut_inlining::bounded_reader(
    std::uint64_t max_bytes) const {
  return [this, max_bytes,
          bytes = std::uint64_t{0}](const streams::part_reference& r) mutable -> result<streams::chunk> {
    bytes += r.size;
    if (bytes > max_bytes) {
      return make_error(errc::cold_backlogged,
                        "too large: more than " + std::to_string(max_bytes) +
                            " bytes not yet in objects would be in it; it waits for the uploads");
    }
    return read(r);
  };
}

cold_snapshot_io::built restore_snapshot_objects(const tier::restore_snapshot_header& h,
                                                 std::span<const std::byte> state, std::uint64_t max_bytes,
                                                 std::uint64_t part_bytes) {
  if (state.size() + tier::restore_snapshot_header_size > max_bytes) {
    return make_error(errc::cold_backlogged,
                      "too large: " + std::to_string(state.size()) +
                          " bytes (the bytes not yet in objects are in it; it waits for the uploads)");
  }
  return tier::encode_restore_snapshot_objects(h, state, part_bytes);
}

namespace {

struct snapshot_upload {
  tier::uploader::put_fn put;
  tier::object_name name;
  tier::restore_snapshot_objects objects;
  std::function<bool()> live;
  std::function<void(std::string)> done;
};

// Puts part `part` (the head once the parts are all in), then the next.
void put_from(std::shared_ptr<snapshot_upload> u, std::uint32_t part) {
  const bool head = part == u->objects.parts.size();
  std::string key = head ? tier::snapshot_key(u->name) : tier::snapshot_part_key(u->name, part);
  auto bytes = std::make_shared<const tier::object_bytes>(head ? std::move(u->objects.head)
                                                               : std::move(u->objects.parts[part]));
  auto put = u->put;  // the upload may end in the call
  put(key, std::move(bytes),
      [u = std::move(u), part, head, key](tier::store_result<tier::object_info> r) mutable {
        if (!u->live()) return;
        if (!r) return u->done(key + ": " + r.err().describe());
        if (head) return u->done("");
        put_from(std::move(u), part + 1);
      });
}

}  // namespace

void put_restore_snapshot(const tier::uploader::put_fn& put, const tier::object_name& name,
                          tier::restore_snapshot_objects objects, std::function<bool()> live,
                          std::function<void(std::string failure)> done) {
  put_from(std::make_shared<snapshot_upload>(
               snapshot_upload{put, name, std::move(objects), std::move(live), std::move(done)}),
           0);
}

snapshot_pruning prune_snapshot_keys(std::vector<std::string> keys, std::size_t keep) {
  std::vector<std::pair<tier::object_name, std::string>> heads;
  std::vector<std::pair<tier::object_name, std::string>> parts;
  for (std::string& k : keys) {
    if (auto name = tier::parse_snapshot_key(k)) {
      heads.emplace_back(*name, std::move(k));
    } else if (auto part = tier::parse_snapshot_part_key(k)) {
      parts.emplace_back(part->snapshot, std::move(k));
    }
  }
  // By (term, sequence): the newest `keep` stay.
  std::sort(heads.begin(), heads.end());
  const std::size_t drop = heads.size() > keep ? heads.size() - keep : 0;
  snapshot_pruning out;
  for (std::size_t i = 0; i < heads.size(); ++i) (i < drop ? out.drop : out.kept).push_back(heads[i].second);
  if (drop > 0) {
    const tier::object_name& oldest_kept = heads[drop].first;
    for (auto& [name, key] : parts) {
      if (name < oldest_kept) out.drop.push_back(std::move(key));
    }
  }
  return out;
}

namespace {

// The cut made self-contained (off the loop): records in objects forgotten, the others inlined from the
// log's segments, the index beside them, wrapped as a restore snapshot object.
cold_snapshot_io::built build(std::vector<std::byte> blob, const cut_inlining& in,
                              tier::restore_snapshot_header h, std::uint64_t max_bytes,
                              std::uint64_t part_bytes) {
  auto parts = decode_checkpoint(blob);
  if (!parts) return parts.err();
  auto sm = streams::inline_snapshot(
      parts->sm, [&](const std::string& path) { return in.forget_before(path); },
      in.bounded_reader(max_bytes));
  if (!sm) return sm.err();
  return restore_snapshot_objects(h, encode_checkpoint(std::move(*sm), parts->index), max_bytes, part_bytes);
}

}  // namespace

cold_snapshots::cold_snapshots(partition& p, cold_snapshot_options o, cold_snapshot_io io)
    : part_(p), o_(std::move(o)), io_(std::move(io)) {}

cold_snapshots::~cold_snapshots() {
  *alive_ = false;
  stop();
}

void cold_snapshots::start() {
  arm();
}

void cold_snapshots::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (timer_ != 0) part_.executor().cancel_timer(timer_);
  timer_ = 0;
}

void cold_snapshots::arm() {
  if (stopped_) return;
  timer_ = part_.executor().add_timer(o_.interval, [this] {
    timer_ = 0;
    take();
    arm();
  });
}

bool cold_snapshots::names(std::string_view key) const {
  if (!own_only_) return true;
  for (const auto& [snapshot, keys] : named_) {
    if (keys.find(key) != keys.end()) return true;
  }
  return false;
}

void cold_snapshots::take() {
  if (stopped_ || busy_) return;
  // Nothing logged since the last cut (a command or an index record would have moved the log): the
  // snapshot in the bucket is still exact.
  if (part_.wal().last_lsn().value() == last_cut_lsn_ && last_cut_lsn_ != 0) return;
  // The bytes not in objects are inlined and the snapshot is built in memory: past `max_bytes` it is not
  // built (that would read them all) until the uploads catch up.
  if (const cold_mover* m = part_.mover();
      m && m->local_bytes() + tier::restore_snapshot_header_size > o_.max_bytes) {
    ++stats_.too_large;
    fail("too large: " + std::to_string(m->local_bytes()) +
         " bytes are not in objects yet (they are in a snapshot); it waits for the uploads");
    return;
  }
  busy_ = true;
  std::weak_ptr<bool> alive = alive_;
  part_.snapshot_for_bucket([this, alive](result<checkpointer::bucket_cut> cut) {
    if (auto a = alive.lock(); !a || !*a) return;
    if (!cut) {
      fail("no cut of the state: " + cut.err().reason);
      return;
    }
    on_cut(cut->covered, std::move(cut->blob));
  });
}

void cold_snapshots::on_cut(storage::lsn covered, std::vector<std::byte> blob) {
  if (stopped_) {
    busy_ = false;
    return;
  }
  // Taken on the loop, at the cut: which streams forget what, and what the index names.
  cut_inlining inlining = cut_inlining::from(part_);
  string_set keys;
  for (std::string& k : part_.cold_index().object_keys()) keys.insert(std::move(k));
  tier::restore_snapshot_header h;
  h.epoch = o_.epoch;
  h.group = o_.group;
  h.groups = o_.groups;
  h.lsn = covered.value();
  h.taken_at_ms = part_.now_ms();
  last_cut_lsn_ = covered.value();
  const std::uint64_t max_bytes = o_.max_bytes;
  const std::uint64_t part_bytes = o_.part_bytes;
  std::weak_ptr<bool> alive = alive_;
  io_.off_loop([blob = std::move(blob), inlining = std::move(inlining), h, max_bytes,
                part_bytes]() mutable { return build(std::move(blob), inlining, h, max_bytes, part_bytes); },
               [this, alive, h, keys = std::move(keys)](cold_snapshot_io::built b) mutable {
                 if (auto a = alive.lock(); !a || !*a) return;
                 on_built(h.lsn, h.taken_at_ms, std::move(b), std::move(keys));
               });
}

void cold_snapshots::on_built(std::uint64_t lsn, std::int64_t taken_ms, cold_snapshot_io::built b,
                              string_set keys) {
  if (stopped_) {
    busy_ = false;
    return;
  }
  if (!b) {
    if (b.err().is<errc>() && b.err().code == static_cast<int>(errc::cold_backlogged)) {
      ++stats_.too_large;
    }
    last_cut_lsn_ = 0;  // try again at the next interval, whatever the log does
    fail(b.err().reason);
    return;
  }
  const tier::object_name name{o_.epoch, o_.group, o_.term, tier::upload_seq{next_seq_++}};
  const std::string key = tier::snapshot_key(name);
  const std::uint64_t size = b->bytes();
  const std::uint64_t parts = b->parts.size();
  named_[key] = std::move(keys);  // named from now: the sweep keeps its objects while it may land
  std::weak_ptr<bool> alive = alive_;
  put_restore_snapshot(
      io_.put, name, std::move(*b),
      [alive] {
        auto a = alive.lock();
        return a && *a;
      },
      [this, size, parts, lsn, taken_ms](std::string failure) {
        if (!failure.empty()) {
          // It may have landed all the same: its names stay until a listing shows it is gone or older.
          last_cut_lsn_ = 0;
          fail("uploading " + failure);
          return;
        }
        stats_.landed(size, parts, lsn, taken_ms);
        prune("", {});
      });
}

void cold_snapshots::fail(std::string why) {
  ++stats_.failed;
  if (why != stats_.last_error) {
    log::warn("weir serve: cold tier: restore snapshot of group {}: {}", o_.group.value(), why);
  }
  stats_.last_error = std::move(why);
  busy_ = false;
}

void cold_snapshots::prune(std::string continuation, std::vector<std::string> seen) {
  if (stopped_) {
    busy_ = false;
    return;
  }
  std::weak_ptr<bool> alive = alive_;
  io_.list(tier::snapshot_key_prefix(o_.epoch, o_.group), std::move(continuation),
           tier::object_store::max_list_keys,
           [this, alive, seen = std::move(seen)](tier::store_result<tier::list_page> page) mutable {
             if (auto a = alive.lock(); !a || !*a) return;
             if (!page) {
               busy_ = false;  // the next snapshot's listing deletes them
               log::warn("weir serve: cold tier: listing the restore snapshots of group {}: {}",
                         o_.group.value(), page.err().describe());
               return;
             }
             for (const auto& o : page->objects) seen.push_back(o.key);
             if (page->truncated && !page->next_token.empty()) {
               prune(page->next_token, std::move(seen));
               return;
             }
             const snapshot_pruning p = prune_snapshot_keys(std::move(seen), o_.keep);
             bool own_only = true;
             for (const std::string& key : p.kept) {
               own_only = own_only && tier::parse_snapshot_key(key)->term == o_.term;
             }
             for (auto it = named_.begin(); it != named_.end();) {
               // Ours and no longer kept (deleted below, or by an operator): their names go.
               const bool kept = std::binary_search(p.kept.begin(), p.kept.end(), it->first);
               it = kept ? std::next(it) : named_.erase(it);
             }
             own_only_ = own_only;
             busy_ = false;
             for (const std::string& key : p.drop) {
               io_.remove(key, [this, alive, key](tier::store_result<tier::store_done> r) {
                 if (auto a = alive.lock(); !a || !*a) return;
                 if (r) {
                   ++stats_.deleted;
                 } else {
                   log::warn("weir serve: cold tier: deleting the restore snapshot object {}: {}", key,
                             r.err().describe());
                 }
               });
             }
           });
}

}  // namespace weir::replica
