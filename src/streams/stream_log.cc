#include "streams/stream_log.h"

#include <algorithm>
#include <limits>

#include "base/assert.h"

namespace weir::streams {

memory_log::memory_log(std::shared_ptr<const memory_log> source, stream_offset base)
    : base_(base.value()), held_from_(base.value()), source_(std::move(source)) {}

memory_log::~memory_log() {
  // Unlink a chain of forks that only this log keeps alive one by one, so that destroying the end of a
  // long chain does not recurse once per fork.
  std::shared_ptr<const memory_log> s = std::move(source_);
  while (s && s.use_count() == 1) {
    std::shared_ptr<const memory_log> next = std::move(const_cast<memory_log&>(*s).source_);
    s = std::move(next);
  }
}

void memory_log::link_source(std::shared_ptr<const memory_log> source) {
  WEIR_ASSERT(source.get() != this, "a fork at {} linked to itself", base_);
  source_ = std::move(source);
}

void memory_log::take_records(memory_log& fresh) {
  WEIR_ASSERT(fresh.base_ == base_, "rebuilt log starts at {}, this one at {}", fresh.base_, base_);
  std::lock_guard lock(mu_);
  records_ = std::move(fresh.records_);
  fresh.records_.clear();
  held_from_ = fresh.held_from_;
  ++front_cuts_;
  next_hint_ = 0;
}

stream_offset memory_log::tail() const {
  return stream_offset(records_.empty() ? held_from_ : records_.back().end);
}

std::uint64_t memory_log::forget_before(stream_offset pos) {
  const std::uint64_t p = std::min(pos.value(), tail().value());
  if (p <= held_from_) return 0;
  const std::size_t n = first_ending_after(p);  // the records ending at or before p
  if (n == 0) return 0;
  const std::uint64_t until = records_[n - 1].end;
  std::uint64_t bytes = 0;
  std::vector<record> gone;  // released after the lock: readers in flight may still hold the chunks
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < n; ++i) bytes += records_[i].data.size;
    gone.assign(std::make_move_iterator(records_.begin()), std::make_move_iterator(records_.begin() + n));
    records_.erase(records_.begin(), records_.begin() + static_cast<std::ptrdiff_t>(n));
    held_from_ = until;
    ++front_cuts_;
  }
  next_hint_ = 0;
  return bytes;
}

namespace {
// Records with no place in the log before the first that has one: restored with their bytes inline (a
// restore from the bucket), in memory only, older than anything on disk. The others without a place are
// in flight, at the end.
std::size_t unlocated_prefix(const std::vector<record>& records) {
  std::size_t i = 0;
  while (i < records.size() && !records[i].data.at.known()) ++i;
  return i == records.size() ? 0 : i;
}
}  // namespace

std::optional<std::uint64_t> memory_log::first_segment() const {
  if (records_.empty()) return std::nullopt;
  if (unlocated_prefix(records_) > 0) return 0;
  if (!records_.front().data.at.known()) return std::nullopt;
  return records_.front().data.at.segment;
}

stream_offset memory_log::end_through_segment(std::uint64_t segment) const {
  const auto located = records_.begin() + static_cast<std::ptrdiff_t>(unlocated_prefix(records_));
  auto it = std::partition_point(located, records_.end(), [segment](const record& r) {
    return r.data.at.known() && r.data.at.segment <= segment;
  });
  return it == records_.begin() ? held_from() : stream_offset(std::prev(it)->end);
}

void memory_log::set_held_from(stream_offset pos) {
  WEIR_ASSERT(records_.empty() && pos.value() >= base_, "held_from {} set on a log of {} records from {}",
              pos.value(), records_.size(), base_);
  held_from_ = pos.value();
}

void memory_log::append(record r) {
  WEIR_ASSERT(r.data.size > 0, "empty record appended at {}", r.end);
  WEIR_ASSERT(r.end == tail().value() + r.data.size, "record end {} does not follow tail {} + {}", r.end,
              tail().value(), r.data.size);
  std::lock_guard lock(mu_);
  records_.push_back(std::move(r));
}

std::size_t memory_log::first_ending_after(std::uint64_t pos) const {
  auto it = std::upper_bound(records_.begin(), records_.end(), pos,
                             [](std::uint64_t p, const record& r) { return p < r.end; });
  return static_cast<std::size_t>(it - records_.begin());
}

const memory_log* memory_log::holder_of(std::uint64_t pos, std::uint64_t& limit) const {
  const memory_log* l = this;
  while (pos < l->base_ && l->source_) {
    limit = std::min(limit, l->base_);
    l = l->source_.get();
  }
  return l;
}

std::uint64_t memory_log::read_own(std::uint64_t pos, std::uint64_t limit, std::size_t max_bytes,
                                   bool whole_records, read_plan& plan, bool& full) const {
  for (std::size_t i = first_ending_after(pos); i < records_.size(); ++i) {
    const record& r = records_[i];
    if (r.begin() >= limit) break;
    const std::uint64_t end = std::min(r.end, limit);  // a byte-stream record cut at a fork point
    const std::uint64_t skip = pos > r.begin() ? pos - r.begin() : 0;
    if (whole_records && skip > 0) {
      // Not a boundary of a message-framed record: continue at the next record.
      pos = end;
      plan.next = stream_offset(pos);
      continue;
    }
    std::uint64_t avail = end - r.begin() - skip;
    const std::uint64_t room = max_bytes > plan.bytes ? max_bytes - plan.bytes : 0;
    if (avail > room) {
      if (whole_records) {
        if (plan.bytes > 0) {  // always return at least one record
          full = true;
          break;
        }
      } else {
        if (room == 0) {
          full = true;
          break;
        }
        avail = room;
      }
    }
    chunk_slice s = r.data;
    s.begin += static_cast<std::uint32_t>(skip);
    s.size = static_cast<std::uint32_t>(avail);
    plan.slices.push_back(std::move(s));
    plan.bytes += avail;
    pos = r.begin() + skip + avail;
    plan.next = stream_offset(pos);
    if (plan.bytes >= max_bytes) {
      full = true;
      break;
    }
  }
  return pos;
}

read_plan memory_log::read(stream_offset from, std::size_t max_bytes, bool whole_records) const {
  read_plan plan;
  const std::uint64_t tail_pos = tail().value();
  std::uint64_t pos = std::min(from.value(), tail_pos);
  plan.next = stream_offset(pos);
  bool full = false;
  if (pos >= base_ || !source_) {
    // Own records only (a stream that is not a fork, or a read past the fork point). An unlinked fork
    // (its source's records not at hand) returns nothing before its base.
    pos = std::max(pos, base_);
    plan.next = stream_offset(pos);
    if (pos < held_from_) {
      plan.in_objects =
          object_span{name_, stream_offset(pos), stream_offset(std::min(held_from_, pos + max_bytes))};
      return plan;
    }
    if (pos < tail_pos) (void)read_own(pos, tail_pos, max_bytes, whole_records, plan, full);
    plan.up_to_date = plan.next.value() == tail_pos;
    return plan;
  }
  // The logs this read passes through, from this one up to the one holding `pos`, each with the
  // position where this stream stops seeing it (the lowest fork point below it). The limits do not
  // grow going up, so as the read moves forward its holder moves down the chain: a read costs the chain's
  // depth once, not once per record.
  struct link {
    const memory_log* log;
    std::uint64_t limit;
  };
  std::vector<link> chain{{this, tail_pos}};
  for (const memory_log* l = this; pos < l->base_ && l->source_;) {
    const std::uint64_t limit = std::min(chain.back().limit, l->base_);
    l = l->source_.get();
    chain.push_back({l, limit});
  }
  std::size_t k = chain.size() - 1;
  while (!full && pos < tail_pos) {
    const link& h = chain[k];
    if (pos < h.log->base_) {
      // An unlinked fork at the top of the chain: nothing to return before its base.
      pos = std::min(h.limit, h.log->base_);
    } else {
      std::unique_lock<std::mutex> lock;
      if (h.log != this) lock = std::unique_lock(h.log->mu_);
      if (pos < h.log->held_from_) {
        // Bytes only in objects: the read stops before them (a read starting there gets them alone).
        if (plan.slices.empty()) {
          plan.in_objects =
              object_span{h.log->name_, stream_offset(pos),
                          stream_offset(std::min({h.limit, h.log->held_from_, pos + max_bytes}))};
        }
        break;
      }
      pos = h.log->read_own(pos, h.limit, max_bytes, whole_records, plan, full);
      // The holder ends before this stream's view of it does (lost inherited data): skip the hole
      // rather than read it forever.
      if (!full && pos < h.limit) pos = h.limit;
    }
    if (!full) plan.next = stream_offset(pos);
    while (k > 0 && chain[k].limit <= pos) --k;  // the holder of `pos`: the last link still seeing it
  }
  plan.up_to_date = plan.next.value() == tail_pos;
  return plan;
}

std::optional<record> memory_log::record_at(stream_offset at) const {
  std::uint64_t limit = tail().value();
  if (at.value() >= limit) return std::nullopt;
  const memory_log* l = holder_of(at.value(), limit);
  if (at.value() < l->base_) return std::nullopt;
  std::unique_lock<std::mutex> lock;
  if (l != this) lock = std::unique_lock(l->mu_);
  std::size_t i = l->first_ending_after(at.value());
  if (i >= l->records_.size() || l->records_[i].begin() != at.value()) return std::nullopt;
  record r = l->records_[i];
  if (r.end > limit) {  // seen through a fork point inside it
    r.data.size = static_cast<std::uint32_t>(limit - r.begin());
    r.end = limit;
  }
  return r;
}

bool memory_log::is_boundary(stream_offset at) const {
  const std::uint64_t pos = at.value();
  const std::uint64_t tail_pos = tail().value();
  if (pos == 0 || pos == tail_pos) return true;
  if (pos > tail_pos) return false;
  const memory_log* l = this;
  while (true) {
    if (pos == l->base_) return true;  // a fork point: a fork's own records start there
    if (pos > l->base_ || !l->source_) break;
    l = l->source_.get();
  }
  if (pos < l->base_) return false;  // unlinked: unknown
  std::unique_lock<std::mutex> lock;
  if (l != this) lock = std::unique_lock(l->mu_);
  std::size_t i = l->first_ending_after(pos);
  return i < l->records_.size() && l->records_[i].begin() == pos;
}

std::size_t memory_log::find_end(std::uint64_t end) {
  // The hot tier asks for the newest record (just made durable), then evicts records oldest first.
  if (!records_.empty() && records_.back().end == end) return records_.size() - 1;
  std::size_t i = next_hint_;
  if (i >= records_.size() || records_[i].end != end) {
    auto it = std::lower_bound(records_.begin(), records_.end(), end,
                               [](const record& r, std::uint64_t e) { return r.end < e; });
    if (it == records_.end() || it->end != end) return records_.size();
    i = static_cast<std::size_t>(it - records_.begin());
  }
  next_hint_ = i + 1;
  return i;
}

bool memory_log::set_location(std::uint64_t end, const disk_location& at) {
  std::size_t i = find_end(end);
  if (i == records_.size()) return false;
  std::lock_guard lock(mu_);
  records_[i].data.at = at;
  return true;
}

std::size_t memory_log::drop_bytes(std::uint64_t end) {
  std::size_t i = find_end(end);
  if (i == records_.size()) return 0;
  record& r = records_[i];
  if (r.data.cold() || !r.data.at.known()) return 0;
  chunk dropped;  // released after the lock: readers in flight may still hold the chunk
  {
    std::lock_guard lock(mu_);
    dropped = std::move(r.data.buf);
    r.data.buf.reset();
  }
  return r.data.size;
}

void memory_log::for_each_record(const std::function<void(const record&)>& fn) const {
  for (const record& r : records_) fn(r);
}

void memory_log::for_each_record_in(stream_offset from, stream_offset until,
                                    const std::function<void(const record&)>& fn) const {
  for (std::size_t i = first_ending_after(from.value()); i < records_.size(); ++i) {
    const record& r = records_[i];
    if (r.begin() >= until.value()) break;
    if (r.begin() >= from.value()) fn(r);
  }
}

bool memory_log::visit_records(std::uint64_t cuts, std::size_t first, std::size_t count,
                               const std::function<void(const record&)>& fn) const {
  std::lock_guard lock(mu_);
  if (front_cuts_ != cuts || first + count > records_.size()) return false;
  for (std::size_t i = first; i < first + count; ++i) fn(records_[i]);
  return true;
}

}  // namespace weir::streams
