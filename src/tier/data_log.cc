#include "tier/data_log.h"

#include <algorithm>
#include <set>

#include "base/log.h"
#include "storage/log_recovery.h"
#include "streams/command_codec.h"

namespace weir::tier {

data_log::data_log(storage::env& e, std::string dir, data_log_options o, storage::segment_reader* reader,
                   hooks h)
    : env_(e), dir_(std::move(dir)), opts_(o), reader_(reader), hooks_(std::move(h)) {}

data_log::~data_log() {
  *alive_ = false;  // completions the writer posts after this find the log gone
  writer_.reset();
}

result<std::unique_ptr<data_log>> data_log::open(storage::env& e, const std::string& dir, data_log_options o,
                                                 storage::executor exec, storage::segment_reader* reader,
                                                 hooks h, storage::disk_worker* worker) {
  if (auto st = e.create_dirs(dir); !st) return st.err();
  // Nothing is read back: raft rebuilds the state. Recovery only finds where writing continues (and cuts
  // a torn tail).
  auto rec = storage::recover_log(
      e, dir, [](const storage::record_view&) -> status { return {}; },
      [](const storage::checkpoint&) -> status { return {}; });
  if (!rec) return rec.err();
  if (rec->truncated_bytes > 0) {
    log::warn("weir cluster: {}: cut a torn tail of {} bytes (data written again from raft)", dir,
              rec->truncated_bytes);
  }
  std::unique_ptr<data_log> self(new data_log(e, dir, o, reader, std::move(h)));
  // What recovery found is on disk; a snapshot references only records synced before it was taken.
  if (!rec->segments.empty()) {
    self->durable_segment_ = rec->segments.back().id.value();
    self->durable_offset_ = rec->segments.back().size;
  }
  storage::log_options lo;
  lo.segment_bytes = o.segment_bytes;
  lo.sync.mode = storage::sync_mode::never;  // durability comes from raft; synced explicitly (sync_now)
  self->exec_ = exec;
  auto w = storage::log_writer::open(e, dir, lo, *rec, std::move(exec), worker);
  if (!w) return w.err();
  self->writer_ = std::move(*w);
  return self;
}

void data_log::write(const streams::command& c, std::uint64_t generation, std::uint64_t end) {
  const streams::payload* data = streams::command_data(c);
  if (!data || data->empty()) return;
  std::uint32_t data_offset = 0;
  streams::encode_into(c, scratch_, &data_offset);
  append(generation, end, static_cast<std::uint32_t>(data->size()), data_offset);
}

void data_log::write_record(std::string_view path, std::uint64_t generation, const streams::record& r) {
  if (!r.data.buf || r.data.size == 0) return;
  // The whole chunk is written, so that the slice's `begin` (counted from the chunk's start) finds the
  // record's bytes at data_offset + begin, as it does in memory.
  streams::append_command c;
  c.path = std::string(path);
  c.body.bytes = r.data.buf;
  c.body.messages = r.messages;
  std::uint32_t data_offset = 0;
  streams::encode_into(c, scratch_, &data_offset);
  append(generation, r.end, r.data.size, data_offset);
}

void data_log::write_raw(std::uint64_t transfer, std::string bytes, raw_done done) {
  if (bytes.empty()) {
    exec_([done = std::move(done)] { done(make_error(storage::errc::invalid_argument, "an empty record")); });
    return;
  }
  const auto size = static_cast<std::uint32_t>(bytes.size());
  // An append record like the others (its path is unknown here and not needed: the log is never
  // replayed, and the snapshot's reference names the stream).
  streams::append_command c;
  c.body.bytes = streams::make_chunk(std::move(bytes));
  std::uint32_t data_offset = 0;
  streams::encode_into(c, scratch_, &data_offset);
  std::weak_ptr<bool> alive = alive_;
  writer_->append(
      streams::command_record_type, std::as_bytes(std::span(scratch_.data(), scratch_.size())),
      [this, alive, transfer, size, data_offset, done = std::move(done)](result<storage::append_ack> r) {
        auto a = alive.lock();
        if (!a || !*a) return;
        if (!r) {
          ++stats_.write_failures;
          done(r.err());
          return;
        }
        const streams::disk_location at = counted(*r, size, data_offset);
        // Pinned before anything else runs: a reclaim covers every record written so far.
        transfer_pins_[transfer].insert(at.segment);
        if (unsynced_.empty()) oldest_unsynced_ms_ = now_ms_;
        unsynced_.push_back(written{0, 0, size, at});
        unsynced_bytes_ += size;
        if (unsynced_bytes_ >= opts_.sync_bytes) sync_now();
        done(at);
      });
  if (scratch_.capacity() > (1u << 20)) std::string().swap(scratch_);
}

void data_log::unpin_transfer(std::uint64_t transfer) {
  if (transfer_pins_.erase(transfer) != 0) pins_changed_ = true;
}

void data_log::when_durable(const streams::disk_location& at, std::function<void()> fn) {
  durable_waiters_.emplace_back(at, std::move(fn));
  if (durable(at)) {
    std::weak_ptr<bool> alive = alive_;
    exec_([this, alive] {
      if (auto a = alive.lock(); a && *a) fire_durable_waiters();
    });
    return;
  }
  sync_now();
}

void data_log::fire_durable_waiters() {
  std::vector<std::function<void()>> ready;
  std::erase_if(durable_waiters_, [&](auto& w) {
    if (!durable(w.first)) return false;
    ready.push_back(std::move(w.second));
    return true;
  });
  for (auto& fn : ready) fn();
  // A waiter whose record was written while that sync ran needs the next one (not the interval's).
  if (!durable_waiters_.empty()) sync_now();
}

void data_log::append(std::uint64_t generation, std::uint64_t end, std::uint32_t size,
                      std::uint32_t data_offset) {
  queued_.push_back(queued{queued_bytes_.size(), scratch_.size(), generation, end, size, data_offset});
  queued_bytes_.append(scratch_);
  queued_size_ += size;
  if (scratch_.capacity() > (1u << 20)) std::string().swap(scratch_);  // keep no huge body around
  if (opts_.hand_over_bytes > 0) {
    if (queued_bytes_.size() >= opts_.hand_over_bytes) hand_over();
    return;
  }
  // Large records gain nothing from waiting for the turn's end (one wake-up is little beside their
  // bytes): handed over at once, so that a turn of large applies holds no second copy of them.
  if (queued_bytes_.size() >= turn_hand_over_bytes) return hand_over();
  if (hand_over_posted_) return;
  hand_over_posted_ = true;
  std::weak_ptr<bool> alive = alive_;
  exec_([this, alive] {
    if (auto a = alive.lock(); a && *a) {
      hand_over_posted_ = false;
      hand_over();
    }
  });
}

void data_log::hand_over() {
  if (queued_.empty()) return;
  const auto* bytes = reinterpret_cast<const std::byte*>(queued_bytes_.data());
  std::weak_ptr<bool> alive = alive_;
  for (const queued& q : queued_) {
    writer_->append(streams::command_record_type, std::span(bytes + q.offset, q.length),
                    [this, alive, generation = q.generation, end = q.end, size = q.size,
                     data_offset = q.data_offset](result<storage::append_ack> r) {
                      if (auto a = alive.lock(); a && *a) on_written(r, generation, end, size, data_offset);
                    });
  }
  queued_.clear();
  queued_bytes_.clear();
  queued_size_ = 0;
  if (queued_bytes_.capacity() > (4u << 20)) std::string().swap(queued_bytes_);
}

// A record of `size` stream bytes was written: counted, and its place.
streams::disk_location data_log::counted(const storage::append_ack& a, std::uint32_t size,
                                         std::uint32_t data_offset) {
  last_lsn_ = std::max(last_lsn_, a.seq);
  ++stats_.records;
  stats_.bytes += size;
  bytes_since_reclaim_ += size;
  streams::disk_location at;
  at.core = opts_.core;
  at.segment = a.pos.segment.value();
  at.offset = a.pos.offset;
  at.data_offset = data_offset;
  return at;
}

void data_log::on_written(const result<storage::append_ack>& r, std::uint64_t generation, std::uint64_t end,
                          std::uint32_t size, std::uint32_t data_offset) {
  if (!r) {
    // The record stays in memory, unlocated (a snapshot inlines it); the state is not affected.
    if (stats_.write_failures++ == 0 || stats_.write_failures % 1000 == 0) {
      log::error("weir cluster: {}: writing stream data failed ({}; {} so far); it stays in memory", dir_,
                 r.err().reason, stats_.write_failures);
    }
    return;
  }
  const streams::disk_location at = counted(*r, size, data_offset);
  if (!hooks_.locate(generation, end, at)) return;  // the stream is gone
  // The record's newest copy: an older one still waiting for its sync is not admitted (see on_synced).
  newest_[{generation, end}] = at;
  if (unsynced_.empty()) oldest_unsynced_ms_ = now_ms_;
  unsynced_.push_back(written{generation, end, size, at});
  unsynced_bytes_ += size;
  if (unsynced_bytes_ >= opts_.sync_bytes) sync_now();
}

void data_log::sync_now() {
  // Callers ask often (a group whose snapshot waits asks at each apply): only a sync that starts takes
  // the queue along, or the batches would shrink to one apply's.
  if (syncing_) return;
  hand_over();  // the next sync covers them
  if (unsynced_.empty()) return;
  syncing_ = true;
  // The records written so far; those written while the sync runs wait for the next one.
  const std::size_t count = unsynced_.size();
  std::weak_ptr<bool> alive = alive_;
  writer_->sync([this, alive, count](status st) {
    if (auto a = alive.lock(); a && *a) on_synced(st, count);
  });
}

void data_log::on_synced(const status& st, std::size_t count) {
  syncing_ = false;
  if (!st) {
    // The records stay in memory; the next tick tries again.
    log::error("weir cluster: {}: sync failed ({}); {} bytes stay in memory until a sync succeeds", dir_,
               st.err().reason, unsynced_bytes_);
    return;
  }
  ++stats_.syncs;
  for (std::size_t i = 0; i < count && !unsynced_.empty(); ++i) {
    const written w = unsynced_.front();
    unsynced_.pop_front();
    unsynced_bytes_ -= w.size;
    durable_segment_ = w.at.segment;
    durable_offset_ = w.at.offset + 1;
    if (w.generation == 0) continue;
    // Admission locates the record at w.at again. A record may have two copies waiting for a sync: one
    // written at its apply, and one written after a snapshot restored it inline (persist_unlocated)
    // before the first was synced. Only the newest copy is admitted: the state points at it, so a reclaim
    // may have deleted the older copy's segment already.
    auto newest = newest_.find({w.generation, w.end});
    if (newest == newest_.end() || newest->second.segment != w.at.segment ||
        newest->second.offset != w.at.offset) {
      continue;
    }
    newest_.erase(newest);
    hooks_.admit(w.generation, w.end, w.size, w.at);
  }
  fire_durable_waiters();
  oldest_unsynced_ms_ = now_ms_;  // those left were written while the sync ran
  reclaim(now_ms_);
  if (unsynced_bytes_ >= opts_.sync_bytes) sync_now();
}

void data_log::tick(std::int64_t now_ms) {
  now_ms_ = now_ms;
  hand_over();
  if (!syncing_ && !unsynced_.empty() && now_ms - oldest_unsynced_ms_ >= opts_.sync_interval_ms) sync_now();
  reclaim(now_ms);
}

bool data_log::durable(const streams::disk_location& at) const {
  if (!at.known() || at.core != opts_.core) return false;
  return at.segment < durable_segment_ || (at.segment == durable_segment_ && at.offset < durable_offset_);
}

void data_log::pin(std::uint32_t group, std::vector<std::uint64_t> segments) {
  std::sort(segments.begin(), segments.end());
  segments.erase(std::unique(segments.begin(), segments.end()), segments.end());
  auto& pinned = pins_[group];
  if (pinned == segments) return;
  pinned = std::move(segments);
  pins_changed_ = true;
}

void data_log::reclaim(std::int64_t now_ms) {
  if (reclaiming_ || last_lsn_.value() == 0) return;
  const bool due =
      reclaim_requested_ || bytes_since_reclaim_ >= opts_.reclaim_bytes ||
      (now_ms - last_reclaim_ms_ >= opts_.reclaim_interval_ms && (bytes_since_reclaim_ > 0 || pins_changed_));
  if (!due) return;
  // Every record written so far (lsn <= last_lsn_) is located already, so `keep` covers each of them
  // the state still holds; segments holding later records are not wholly covered and stay.
  std::set<std::uint64_t> keep_ids;
  for (std::uint64_t s : hooks_.referenced()) keep_ids.insert(s);
  for (const auto& [group, segments] : pins_) keep_ids.insert(segments.begin(), segments.end());
  for (const auto& [transfer, segments] : transfer_pins_) keep_ids.insert(segments.begin(), segments.end());
  // A copy written and not yet synced is where its admission (on_synced) will locate the record again,
  // even if a snapshot restored since points the state at another copy: its segment stays until then.
  for (const auto& [record, at] : newest_) keep_ids.insert(at.segment);
  std::vector<storage::segment_id> keep;
  keep.reserve(keep_ids.size());
  for (std::uint64_t s : keep_ids) keep.emplace_back(s);
  reclaiming_ = true;
  reclaim_requested_ = false;
  bytes_since_reclaim_ = 0;
  pins_changed_ = false;
  last_reclaim_ms_ = now_ms;
  std::weak_ptr<bool> alive = alive_;
  writer_->checkpoint(
      last_lsn_, {}, std::move(keep), [this, alive](result<std::vector<storage::segment_id>> removed) {
        auto a = alive.lock();
        if (!a || !*a) return;
        reclaiming_ = false;
        if (!removed) {
          log::warn("weir cluster: {}: reclaiming segments failed: {}", dir_, removed.err().reason);
          return;
        }
        ++stats_.reclaims;
        stats_.segments_removed += removed->size();
        if (reader_) {
          for (storage::segment_id id : *removed) reader_->forget(id);
        }
      });
}

data_log_stats data_log::stats() const {
  data_log_stats s = stats_;
  s.unsynced_bytes = unsynced_bytes();
  s.log = writer_->stats();
  return s;
}

}  // namespace weir::tier
