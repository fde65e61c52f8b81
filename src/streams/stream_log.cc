#include "streams/stream_log.h"

#include <algorithm>

#include "base/assert.h"

namespace weir::streams {

memory_log::memory_log(std::vector<record> inherited, stream_offset base)
    : records_(std::move(inherited)), base_(base.value()) {
  WEIR_ASSERT(records_.empty() || records_.back().end == base_,
              "inherited records end at {}, fork point is {}", records_.back().end, base_);
}

stream_offset memory_log::tail() const {
  return stream_offset(records_.empty() ? base_ : records_.back().end);
}

void memory_log::append(record r) {
  WEIR_ASSERT(r.data.size > 0, "empty record appended at {}", r.end);
  WEIR_ASSERT(r.end == tail().value() + r.data.size, "record end {} does not follow tail {} + {}", r.end,
              tail().value(), r.data.size);
  records_.push_back(std::move(r));
}

std::size_t memory_log::first_ending_after(std::uint64_t pos) const {
  auto it = std::upper_bound(records_.begin(), records_.end(), pos,
                             [](std::uint64_t p, const record& r) { return p < r.end; });
  return static_cast<std::size_t>(it - records_.begin());
}

read_plan memory_log::read(stream_offset from, std::size_t max_bytes, bool whole_records) const {
  read_plan plan;
  std::uint64_t pos = std::min(from.value(), tail().value());
  plan.next = stream_offset(pos);
  for (std::size_t i = first_ending_after(pos); i < records_.size(); ++i) {
    const record& r = records_[i];
    std::uint64_t skip = pos > r.begin() ? pos - r.begin() : 0;
    if (whole_records && skip > 0) {
      // Not a boundary of a message-framed record: continue at the next record.
      pos = r.end;
      plan.next = stream_offset(pos);
      continue;
    }
    std::uint64_t avail = r.data.size - skip;
    std::uint64_t room = max_bytes > plan.bytes ? max_bytes - plan.bytes : 0;
    if (avail > room) {
      if (whole_records) {
        if (plan.bytes > 0) break;  // always return at least one record
      } else {
        if (room == 0) break;
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
    if (plan.bytes >= max_bytes) break;
  }
  plan.up_to_date = plan.next == tail();
  return plan;
}

std::vector<record> memory_log::prefix(stream_offset upto) const {
  std::vector<record> out;
  for (const record& r : records_) {
    if (r.begin() >= upto.value()) break;
    if (r.end <= upto.value()) {
      out.push_back(r);
    } else {
      record part = r;  // a byte-stream record cut at the fork point
      part.data.size = static_cast<std::uint32_t>(upto.value() - r.begin());
      part.end = upto.value();
      out.push_back(std::move(part));
    }
  }
  return out;
}

const record* memory_log::record_at(stream_offset at) const {
  std::size_t i = first_ending_after(at.value());
  if (i < records_.size() && records_[i].begin() == at.value()) return &records_[i];
  return nullptr;
}

bool memory_log::is_boundary(stream_offset at) const {
  if (at.value() == 0 || at.value() == base_ || at == tail()) return true;
  std::size_t i = first_ending_after(at.value());
  return i < records_.size() && records_[i].begin() == at.value();
}

record* memory_log::find_record(std::uint64_t end) {
  // The hot tier asks for the newest record (just made durable), then evicts records oldest first.
  if (!records_.empty() && records_.back().end == end) return &records_.back();
  std::size_t i = next_hint_;
  if (i >= records_.size() || records_[i].end != end) {
    auto it = std::lower_bound(records_.begin(), records_.end(), end,
                               [](const record& r, std::uint64_t e) { return r.end < e; });
    if (it == records_.end() || it->end != end) return nullptr;
    i = static_cast<std::size_t>(it - records_.begin());
  }
  next_hint_ = i + 1;
  return &records_[i];
}

void memory_log::for_each_record(const std::function<void(const record&)>& fn) const {
  for (const record& r : records_) fn(r);
}

}  // namespace weir::streams
