#include "tier/cold_fetcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace weir::tier {
namespace {

std::string block_id(const std::string& key, std::uint64_t index) {
  return key + '#' + std::to_string(index);
}

}  // namespace

cold_fetcher::cold_fetcher(object_store& store, cold_fetcher_options o) : store_(store), o_(o) {}

void cold_fetcher::note(std::uint64_t gets, std::uint64_t bytes, bool failed) {
  std::lock_guard lock(mu_);
  stats_.gets += gets;
  stats_.bytes_fetched += bytes;
  if (failed) ++stats_.failures;
}

store_result<std::shared_ptr<const object_footer>> cold_fetcher::footer(const std::string& key,
                                                                        std::uint64_t object_size) {
  {
    std::lock_guard lock(mu_);
    if (auto it = footers_.map.find(key); it != footers_.map.end()) {
      footers_.order.splice(footers_.order.begin(), footers_.order, it->second.first);
      return it->second.second;
    }
  }
  auto reader = object_reader::open(store_, key, object_size);
  if (!reader) {
    note(1, 0, true);
    return std::move(reader.err());
  }
  auto f = std::make_shared<const object_footer>(reader->footer());
  std::lock_guard lock(mu_);
  ++stats_.gets;  // the tail (a second GET only for a footer larger than the tail read)
  if (footers_.map.find(key) == footers_.map.end() && o_.footers > 0) {
    footers_.order.push_front(key);
    footers_.map.emplace(key, std::make_pair(footers_.order.begin(), f));
    while (footers_.map.size() > o_.footers) {
      footers_.map.erase(footers_.order.back());
      footers_.order.pop_back();
    }
  }
  return f;
}

store_result<std::optional<object_record>> cold_fetcher::record_at(const std::string& key,
                                                                   std::uint64_t object_size,
                                                                   const std::string& stream,
                                                                   streams::stream_offset at) {
  auto f = footer(key, object_size);
  if (!f) return std::move(f.err());
  const object_footer& footer = **f;
  for (std::size_t i = 0; i < footer.ranges.size(); ++i) {
    const object_range& r = footer.ranges[i];
    if (r.stream != stream || at < r.first || at >= r.end) continue;
    auto records = read_range_records(store_, key, footer, i);
    // A GET only for a version 2 range with records (version 1 has no table to read).
    if (footer.records.size() > i && footer.records[i].count > 0) {
      note(1, records ? records->size() * object_record_entry_size : 0, !records);
    }
    if (!records) return std::move(records.err());
    for (const object_record& rec : *records) {
      if (rec.begin == at) return std::optional<object_record>(rec);
      if (rec.begin > at) break;
    }
    return std::optional<object_record>();
  }
  return std::optional<object_record>();
}

cold_fetcher::block cold_fetcher::cached_block(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = blocks_.map.find(id);
  if (it == blocks_.map.end()) {
    ++stats_.block_misses;
    return nullptr;
  }
  ++stats_.block_hits;
  blocks_.order.splice(blocks_.order.begin(), blocks_.order, it->second.first);
  return it->second.second;
}

bool cold_fetcher::is_cached(const std::string& id) const {
  std::lock_guard lock(mu_);
  return blocks_.map.count(id) != 0;
}

void cold_fetcher::insert_block(const std::string& id, block b) {
  std::lock_guard lock(mu_);
  if (b->size() > o_.cache_bytes || blocks_.map.count(id) != 0) return;
  blocks_.order.push_front(id);
  cached_bytes_ += b->size();
  blocks_.map.emplace(id, std::make_pair(blocks_.order.begin(), std::move(b)));
  while (cached_bytes_ > o_.cache_bytes) {
    auto last = blocks_.map.find(blocks_.order.back());
    cached_bytes_ -= last->second.second->size();
    blocks_.map.erase(last);
    blocks_.order.pop_back();
  }
}

store_result<object_bytes> cold_fetcher::read(const std::string& key, std::uint64_t object_size,
                                              std::uint64_t data_position, std::uint64_t length) {
  if (length == 0) return object_bytes{};
  auto f = footer(key, object_size);
  if (!f) return std::move(f.err());
  const object_trailer& t = (*f)->trailer;
  if (data_position > t.data_length || length > t.data_length - data_position) {
    return make_store_error(store_errc::invalid, fmt::format("read {}+{} past the data region of {} in {}",
                                                             data_position, length, t.data_length, key));
  }
  const std::uint64_t first = data_position / t.block_size;
  const std::uint64_t last = (data_position + length - 1) / t.block_size;
  const std::uint64_t blocks_in_object = (t.data_length + t.block_size - 1) / t.block_size;
  std::vector<block> have(last - first + 1);
  std::uint64_t miss_from = UINT64_MAX, miss_to = 0;  // missing blocks [miss_from, miss_to]
  for (std::uint64_t b = first; b <= last; ++b) {
    have[b - first] = cached_block(block_id(key, b));
    if (!have[b - first]) {
      miss_from = std::min(miss_from, b);
      miss_to = b;
    }
  }
  if (miss_from != UINT64_MAX) {
    // One aligned GET for every missing block, and the next ones a sequential reader will want.
    std::uint64_t to = std::min(blocks_in_object - 1, miss_to + o_.read_ahead_blocks);
    while (to > miss_to && is_cached(block_id(key, to))) --to;
    const std::uint64_t data_from = miss_from * t.block_size;
    const std::uint64_t data_to = std::min(t.data_length, (to + 1) * t.block_size);
    const block_span span = blocks_covering(t, data_from, data_to - data_from);
    auto got = store_.get_range(key, span.object_offset, span.object_length);
    note(1, got ? got->bytes.size() : 0, false);
    auto fail = [this](store_error e) {
      note(0, 0, true);
      return e;
    };
    if (!got) return fail(std::move(got.err()));
    if (got->bytes.size() != span.object_length) {
      return fail(
          make_store_error(store_errc::connection, fmt::format("short read of {} blocks: {} of {} bytes", key,
                                                               got->bytes.size(), span.object_length)));
    }
    // Every fetched block's CRC checked, then the data cut back into blocks for the cache.
    auto data = extract_from_blocks(t, span, got->bytes, data_from, data_to - data_from);
    if (!data) return fail(format_store_error(data.err()));
    for (std::uint64_t b = span.first_block, at = 0; at < data->size(); ++b, at += t.block_size) {
      const auto from = data->begin() + static_cast<std::ptrdiff_t>(at);
      auto blk = std::make_shared<const object_bytes>(
          from, from + static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(t.block_size, data->size() - at)));
      if (b >= first && b <= last && !have[b - first]) have[b - first] = blk;
      insert_block(block_id(key, b), std::move(blk));
    }
  }
  object_bytes out;
  out.reserve(length);
  for (std::uint64_t b = first; b <= last; ++b) {
    const object_bytes& blk = *have[b - first];
    const std::uint64_t start = b * t.block_size;
    const std::uint64_t from = std::max(start, data_position) - start;
    const std::uint64_t to = std::min(start + blk.size(), data_position + length) - start;
    out.insert(out.end(), blk.begin() + static_cast<std::ptrdiff_t>(from),
               blk.begin() + static_cast<std::ptrdiff_t>(to));
  }
  return out;
}

cold_fetcher_stats cold_fetcher::stats() const {
  std::lock_guard lock(mu_);
  cold_fetcher_stats s = stats_;
  s.cached_bytes = cached_bytes_;
  return s;
}

}  // namespace weir::tier
