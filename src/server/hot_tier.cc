#include "server/hot_tier.h"

#include <fmt/format.h>

#include <utility>

namespace weir::server {

hot_tier::hot_tier(std::size_t budget_bytes, std::vector<storage::segment_reader*> readers)
    : budget_(budget_bytes), readers_(std::move(readers)) {}

void hot_tier::admit(streams::state_machine& sm, std::uint64_t generation, std::uint64_t end,
                     std::uint32_t size, const streams::disk_location& at) {
  if (readers_.empty() || !at.known()) return;  // memory only: nothing can be read back
  if (!sm.locate(generation, end, at)) return;
  fifo_.push_back(entry{generation, end, size});
  bytes_ += size;
  while (bytes_ > budget_ && !fifo_.empty()) {
    entry& e = fifo_.front();
    // A record deleted since (its stream removed or re-created) freed its memory already.
    if (sm.evict(e.generation, e.end) > 0) ++evicted_;
    bytes_ -= e.size;
    fifo_.pop_front();
  }
}

result<streams::chunk> hot_tier::load(const streams::chunk_slice& s) const {
  const streams::disk_location& at = s.at;
  if (!at.known() || at.core >= readers_.size()) {
    return make_error(
        storage::errc::not_found,
        fmt::format("cold data with no readable place (core {}, segment {})", at.core, at.segment));
  }
  auto data = readers_[at.core]->read_data(storage::log_position{storage::segment_id{at.segment}, at.offset},
                                           std::uint64_t{at.data_offset} + s.begin, s.size);
  if (!data) return data.err();
  if (data->size() != s.size) {
    return make_error(storage::errc::corruption,
                      fmt::format("core {} segment {} offset {}: record shorter than its stream record",
                                  at.core, at.segment, at.offset));
  }
  return streams::make_chunk(std::move(*data));
}

status hot_tier::resolve(streams::read_plan& plan) const {
  std::uint64_t kept = 0;
  for (std::size_t i = 0; i < plan.slices.size(); ++i) {
    streams::chunk_slice& s = plan.slices[i];
    if (!s.cold()) {
      kept += s.size;
      continue;
    }
    auto c = load(s);
    if (!c) {
      // Keep what precedes the failing slice; the reader continues from there.
      plan.next = streams::stream_offset(plan.next.value() - (plan.bytes - kept));
      plan.bytes = kept;
      plan.slices.resize(i);
      plan.up_to_date = false;
      return c.err();
    }
    s.buf = std::move(*c);
    s.begin = 0;
    kept += s.size;
  }
  return {};
}

result<std::string> hot_tier::bytes_of(const streams::chunk_slice& s) const {
  if (!s.cold()) return std::string(s.view());
  auto c = load(s);
  if (!c) return c.err();
  return std::string(**c);
}

}  // namespace weir::server
