#include "replica/shard_wal.h"

#include <algorithm>

#include "base/assert.h"
#include "base/log.h"
#include "streams/command_codec.h"

namespace weir::replica {

shard_wal::shard_wal(std::unique_ptr<storage::log_writer> writer, storage::lsn last)
    : writer_(std::move(writer)), last_lsn_(last) {}

shard_wal::~shard_wal() {
  *alive_ = false;  // completions the writer posts after this find the shard gone
}

namespace {
// The stream whose reader-visible state (tail, closed, existence) `c` may move: the commands that carry
// data, creates and appends. A delete or an expiry hides the stream at once (a crash can at worst bring
// it back, never move an offset), so they need no durable view.
const std::string* viewed_path(const streams::command& c) {
  return streams::command_data(c) ? &streams::command_path(c) : nullptr;
}
}  // namespace

void shard_wal::before(const streams::command& c, const streams::state_machine& sm, std::int64_t now_ms) {
  staged_.reset();
  if (!writer_) return;
  const std::string* path = viewed_path(c);
  if (!path) return;
  auto it = views_.find(*path);
  if (it != views_.end() && it->second.in_force()) return;  // already holds the durable state
  streams::state_machine::position p = sm.position_of(*path, now_ms);
  staged_.emplace(view{p.exists, p.tail, p.closed});
}

void shard_wal::after(const streams::command& c, streams::outcome o, completion done) {
  std::optional<view> staged = staged_;
  staged_.reset();
  op next;
  next.r.o = std::move(o);
  next.done = std::move(done);
  const bool log_it = writer_ && next.r.o.mutated;
  if (!log_it) return complete_unlogged(std::move(next));
  const std::string* path = viewed_path(c);
  if (path && next.r.o.meta) {
    auto it = views_.find(*path);
    if (it != views_.end() && !it->second.in_force() && staged) {
      it->second = *staged;  // a kept view, stale until now
    } else if (it == views_.end() && staged) {
      sweep_views();
      it = views_.emplace(*path, *staged).first;
    }
    if (it != views_.end()) {
      if (!it->second.in_force()) ++views_in_force_;
      ++it->second.in_flight;
      next.viewed = &it->second;
    }
  }
  std::uint32_t data_offset = 0;
  streams::encode_into(c, scratch_, &data_offset);
  const std::string& bytes = scratch_;
  const streams::payload* data = streams::command_data(c);
  const std::size_t data_size = data ? data->size() : 0;
  if (data_size > 0) {
    next.data_offset = data_offset;
    next.r.data_size = static_cast<std::uint32_t>(data_size);
  }
  // A lone writer: this append and the lone_after before it each found nothing else of this core in
  // flight. The log may then write it inline (the loop blocks for the fdatasync; a command arriving
  // meanwhile finds it in flight, ends the streak and queues). Nothing in flight for one append is not
  // enough: at 64 connections on one loop a fifth of the batches held one record.
  lone_appends_ = ops_.empty() ? lone_appends_ + 1 : 0;
  append_op(std::move(next), streams::command_record_type,
            std::as_bytes(std::span(bytes.data(), bytes.size())), lone_appends_ > lone_after);
  if (scratch_.capacity() > (1u << 20)) std::string().swap(scratch_);  // keep no huge body around
}

void shard_wal::log_record(std::uint8_t type, std::vector<std::byte> bytes, completion done) {
  op next;
  next.r.o.mutated = true;
  next.done = std::move(done);
  if (!writer_) return complete_unlogged(std::move(next));
  lone_appends_ = 0;
  append_op(std::move(next), type, bytes, false);
}

void shard_wal::complete_unlogged(op next) {
  if (ops_.empty()) return next.done(next.r);
  next.ready = true;  // completes in order, behind the commands before it
  ops_.push_back(std::move(next));
}

void shard_wal::append_op(op next, std::uint8_t type, std::span<const std::byte> bytes, bool lone) {
  const std::uint64_t seq = front_seq_ + ops_.size();
  next.bytes = bytes.size();
  in_flight_bytes_ += bytes.size();
  logged_bytes_ += bytes.size();
  ops_.push_back(std::move(next));
  std::weak_ptr<bool> alive = alive_;
  writer_->append(
      type, bytes,
      [this, alive, seq](const result<storage::append_ack>& r) {
        if (auto a = alive.lock(); a && *a) on_logged(seq, r);
      },
      lone);
}

void shard_wal::on_logged(std::uint64_t seq, const result<storage::append_ack>& r) {
  WEIR_ASSERT(seq >= front_seq_ && seq < front_seq_ + ops_.size(), "log completion {} outside [{}, {})", seq,
              front_seq_, front_seq_ + ops_.size());
  op& o = ops_[seq - front_seq_];
  o.ready = true;
  if (r) {
    last_lsn_ = std::max(last_lsn_, r->seq);
    if (o.data_offset) {
      o.r.at.segment = r->pos.segment.value();
      o.r.at.offset = r->pos.offset;
      o.r.at.data_offset = *o.data_offset;
    }
  }
  if (!r && !failed()) {
    storage::errc e = storage::errc_of(r.err());
    failure_ = e == storage::errc::no_space ? errc::storage_full : errc::storage_unavailable;
    poisoned_ = e == storage::errc::poisoned;
    failed_reason_ =
        std::string(e == storage::errc::no_space ? "insufficient storage: " : "storage error: ") +
        r.err().reason;
    for (auto& [path, v] : views_) v.pinned = v.in_flight > 0;
    log::error("weir serve: log write failed ({}); this core refuses writes until {}", r.err().reason,
               poisoned_ ? "a restart" : "its state is rebuilt from the log");
    if (on_failure_) on_failure_();
  }
  drain();
}

void shard_wal::drain() {
  while (!ops_.empty() && ops_.front().ready) {
    op o = std::move(ops_.front());
    ops_.pop_front();
    ++front_seq_;
    in_flight_bytes_ -= o.bytes;
    if (view* v = o.viewed) {
      if (!failed() && o.r.o.meta) {
        v->exists = true;
        v->tail = o.r.o.meta->tail;
        v->closed = o.r.o.meta->closed;
      }
      // After a failure the view stays pinned where the log is: reads never see what the log lost.
      --v->in_flight;
      if (!v->in_force()) --views_in_force_;
    }
    if (failed() && o.r.o.mutated) {
      // Applied in memory on top of (or as) the failed record: report it failed (outcome unknown for
      // the records after the failed one: they may be on disk).
      o.r.failure = failure_;
      o.r.reason = failed_reason_;
    }
    o.done(o.r);
  }
  if (ops_.empty() && !idle_waiters_.empty()) {
    std::vector<std::function<void()>> waiters = std::move(idle_waiters_);
    idle_waiters_.clear();
    for (auto& fn : waiters) fn();
  }
}

void shard_wal::sweep_views() {
  if (views_.size() < 1024 || views_.size() < 2 * views_in_force_) return;
  std::erase_if(views_, [](const auto& entry) { return !entry.second.in_force(); });
}

void shard_wal::clear_failure() {
  WEIR_ASSERT(ops_.empty(), "clear_failure with {} commands in flight", ops_.size());
  failure_ = errc::ok;
  failed_reason_.clear();
  poisoned_ = false;
  views_.clear();  // the state now matches the log: nothing to clamp
  views_in_force_ = 0;
}

void shard_wal::when_idle(std::function<void()> fn) {
  if (ops_.empty()) {
    fn();
    return;
  }
  idle_waiters_.push_back(std::move(fn));
}

void shard_wal::clamp(const std::string& path, streams::read_result& rr) const {
  auto it = views_.find(path);
  if (it == views_.end() || !it->second.in_force() || rr.code != streams::errc::ok || !rr.meta) return;
  const view& v = it->second;
  if (!v.exists) {
    rr = streams::read_result{};
    rr.code = streams::errc::not_found;
    return;
  }
  rr.meta->closed = v.closed;
  if (rr.meta->tail <= v.tail) return;
  rr.meta->tail = v.tail;
  streams::read_plan& p = rr.plan;
  if (p.next <= v.tail) return;
  const std::uint64_t excess = p.next.value() - v.tail.value();
  std::uint64_t left = excess;
  while (left > 0 && !p.slices.empty()) {
    streams::chunk_slice& s = p.slices.back();
    std::uint64_t cut = std::min<std::uint64_t>(left, s.size);
    s.size -= static_cast<std::uint32_t>(cut);
    p.bytes -= cut;
    left -= cut;
    if (s.size == 0) p.slices.pop_back();
  }
  p.next = streams::stream_offset(p.next.value() - (excess - left));
  p.up_to_date = true;
}

}  // namespace weir::replica
