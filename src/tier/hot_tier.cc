#include "tier/hot_tier.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace weir::tier {

hot_tier::hot_tier(std::size_t budget_bytes, std::vector<storage::segment_reader*> readers)
    : budget_(budget_bytes), readers_(std::move(readers)) {}

void hot_tier::admit(streams::state_machine& sm, std::uint64_t generation, std::uint64_t end,
                     std::uint32_t size, const streams::disk_location& at) {
  if (readers_.empty() || !at.known()) return;  // memory only: nothing can be read back
  if (!sm.locate(generation, end, at)) return;
  forget_removed(sm);
  fifo_.push_back(entry{generation, end, size});
  tally& t = tallies_[generation];
  t.bytes += size;
  ++t.entries;
  bytes_ += size;
  while (bytes_ > budget_ && !fifo_.empty()) {
    const entry e = fifo_.front();
    fifo_.pop_front();
    auto it = tallies_.find(e.generation);
    if (it == tallies_.end()) {  // a removed stream's: its bytes were forgotten already
      --dead_entries_;
      continue;
    }
    // A stream removed since the last look freed its memory already (evict finds nothing).
    if (sm.evict(e.generation, e.end) > 0) ++evicted_;
    bytes_ -= e.size;
    it->second.bytes -= e.size;
    if (--it->second.entries == 0) tallies_.erase(it);
  }
}

void hot_tier::forget_removed(const streams::state_machine& sm) {
  ++admits_since_look_;
  // Looking costs one lookup per generation with hot records: do it at most once per that many
  // admits, so that a node with many streams and frequent deletes pays O(1) per admit.
  if (sm.removals() == removals_seen_ || admits_since_look_ < tallies_.size()) return;
  removals_seen_ = sm.removals();
  admits_since_look_ = 0;
  for (auto it = tallies_.begin(); it != tallies_.end();) {
    if (sm.holds_generation(it->first)) {
      ++it;
      continue;
    }
    bytes_ -= it->second.bytes;
    dead_entries_ += it->second.entries;
    it = tallies_.erase(it);
  }
  if (dead_entries_ == 0 || 2 * dead_entries_ < fifo_.size()) return;
  // Half the FIFO is dead: drop those entries (O(FIFO), paid for by the admits that made them).
  std::erase_if(fifo_, [this](const entry& e) { return !tallies_.contains(e.generation); });
  dead_entries_ = 0;
  fifo_.shrink_to_fit();
}

result<streams::chunk> hot_tier::load(const std::vector<storage::segment_reader*>& readers,
                                      const streams::chunk_slice& s) {
  const streams::disk_location& at = s.at;
  if (!at.known() || at.core >= readers.size()) {
    return make_error(
        storage::errc::not_found,
        fmt::format("cold data with no readable place (core {}, segment {})", at.core, at.segment));
  }
  auto data = readers[at.core]->read_data(storage::log_position{storage::segment_id{at.segment}, at.offset},
                                          std::uint64_t{at.data_offset} + s.begin, s.size);
  if (!data) return data.err();
  if (data->size() != s.size) {
    return make_error(storage::errc::corruption,
                      fmt::format("core {} segment {} offset {}: record shorter than its stream record",
                                  at.core, at.segment, at.offset));
  }
  return streams::make_chunk(std::move(*data));
}

bool hot_tier::has_cold(const streams::read_plan& plan) {
  if (plan.in_objects) return true;  // bytes only in the bucket (partition::read_cold fetches them)
  for (const streams::chunk_slice& s : plan.slices)
    if (s.cold()) return true;
  return false;
}

status hot_tier::resolve_slices(const std::vector<storage::segment_reader*>& readers,
                                streams::read_plan& plan) {
  // Cold slices come in runs from one core's log (a stream's records, or a fork's inherited ones from
  // its source's core): each run is read with read_data_many, one pread per span of nearby records
  // rather than two per record, so a catch-up read of many small cold records stays cheap.
  std::uint64_t kept = 0;
  std::size_t i = 0;
  while (i < plan.slices.size()) {
    streams::chunk_slice& s = plan.slices[i];
    if (!s.cold()) {
      kept += s.size;
      ++i;
      continue;
    }
    std::size_t j = i;
    std::vector<storage::data_piece> pieces;
    const bool readable = s.at.known() && s.at.core < readers.size();
    while (readable && j < plan.slices.size() && plan.slices[j].cold() && plan.slices[j].at.known() &&
           plan.slices[j].at.core == s.at.core) {
      const streams::chunk_slice& c = plan.slices[j];
      pieces.push_back(
          storage::data_piece{storage::log_position{storage::segment_id{c.at.segment}, c.at.offset},
                              std::uint64_t{c.at.data_offset} + c.begin, c.size});
      ++j;
    }
    std::vector<result<std::string>> got;
    if (pieces.size() > 1) got = readers[s.at.core]->read_data_many(pieces);
    for (std::size_t k = i; k < std::max(j, i + 1); ++k) {
      streams::chunk_slice& c = plan.slices[k];
      result<streams::chunk> loaded = make_error(storage::errc::not_found, "");
      if (got.empty()) {
        loaded = load(readers, c);
      } else if (!got[k - i]) {
        loaded = got[k - i].err();
      } else if (got[k - i]->size() != c.size) {
        loaded = make_error(storage::errc::corruption,
                            fmt::format("core {} segment {} offset {}: record shorter than its stream record",
                                        c.at.core, c.at.segment, c.at.offset));
      } else {
        loaded = streams::make_chunk(std::move(*got[k - i]));
      }
      if (!loaded) {
        // Keep what precedes the failing slice; the reader continues from there.
        plan.next = streams::stream_offset(plan.next.value() - (plan.bytes - kept));
        plan.bytes = kept;
        plan.slices.resize(k);
        plan.up_to_date = false;
        return loaded.err();
      }
      c.buf = std::move(*loaded);
      c.begin = 0;
      kept += c.size;
    }
    i = std::max(j, i + 1);
  }
  return {};
}

result<std::string> hot_tier::bytes_of(const streams::chunk_slice& s) const {
  if (!s.cold()) return std::string(s.view());
  auto c = load(readers_, s);
  if (!c) return c.err();
  return std::string(**c);
}

}  // namespace weir::tier
