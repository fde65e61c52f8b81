#include "base/metrics.h"

namespace weir::metrics {

std::uint64_t histogram_counts::count() const {
  std::uint64_t n = 0;
  for (std::uint64_t c : counts) n += c;
  return n;
}

void histogram_counts::merge(const histogram_counts& o) {
  if (counts.size() < o.counts.size()) counts.resize(o.counts.size(), 0);
  for (std::size_t i = 0; i < o.counts.size(); ++i) counts[i] += o.counts[i];
  sum += o.sum;
}

histogram::histogram(std::span<const std::uint64_t> bounds)
    : bounds_(bounds), counts_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds.size() + 1)) {
  for (std::size_t i = 0; i <= bounds.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

histogram_counts histogram::read() const {
  histogram_counts h;
  h.counts.resize(bounds_.size() + 1);
  for (std::size_t i = 0; i <= bounds_.size(); ++i) h.counts[i] = counts_[i].load(std::memory_order_relaxed);
  h.sum = sum_.load(std::memory_order_relaxed);
  return h;
}

}  // namespace weir::metrics
