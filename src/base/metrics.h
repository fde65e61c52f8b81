// metrics: the cheap building blocks of weir's Prometheus figures. A counter or histogram is written by
// ONE thread (a plain relaxed load and store: no locked instruction, no shared cache line between
// cores) and may be read by any thread; the server keeps one set per core and adds them up when
// /metrics is scraped (server/node_metrics.h). Writers on more than one thread use the `_shared`
// variants (a relaxed fetch_add), off the request path only (the log's sync and flusher threads).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace weir::metrics {

struct counter {
  std::atomic<std::uint64_t> v{0};
  void add(std::uint64_t n = 1) { v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  void add_shared(std::uint64_t n = 1) { v.fetch_add(n, std::memory_order_relaxed); }
  void set(std::uint64_t n) { v.store(n, std::memory_order_relaxed); }
  std::uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

// Counts of a histogram, per bucket (not cumulative: the text encoder accumulates), plus the sum of
// the observations. counts.size() == bounds + 1: the last is the +Inf bucket.
struct histogram_counts {
  std::vector<std::uint64_t> counts;
  std::uint64_t sum = 0;
  std::uint64_t count() const;
  // Adds `o` (same bounds) into this one; an empty one takes o's shape.
  void merge(const histogram_counts& o);
};

// A histogram with fixed, ascending upper bounds in integer units of what it observes (microseconds,
// bytes, records). The bounds must outlive it (a static array).
class histogram {
 public:
  explicit histogram(std::span<const std::uint64_t> bounds);

  void observe(std::uint64_t v) {
    std::size_t i = bucket(v);
    counts_[i].store(counts_[i].load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    sum_.store(sum_.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }
  void observe_shared(std::uint64_t v) {
    counts_[bucket(v)].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
  }

  std::span<const std::uint64_t> bounds() const { return bounds_; }
  // A snapshot (each figure exact on its own; a concurrent writer may be half-way through one).
  histogram_counts read() const;

 private:
  std::size_t bucket(std::uint64_t v) const {
    // le: a value equal to a bound is in its bucket; above the last one, in +Inf (index bounds.size()).
    return static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  }

  std::span<const std::uint64_t> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;
  std::atomic<std::uint64_t> sum_{0};
};

// Shared bucket layouts.
// Latency in microseconds (requests, fsyncs, cold reads, event-loop lag): 10 us to 10 s in 1-2-5
// steps, so that a p99 read off the buckets is within a factor 2.5 (a 1-10 ms decade has 3 bounds).
inline constexpr std::uint64_t latency_us_bounds[] = {
    10,     20,     50,      100,     200,     500,       1'000,     2'000,     5'000,     10'000,
    20'000, 50'000, 100'000, 200'000, 500'000, 1'000'000, 2'000'000, 5'000'000, 10'000'000};
// Counts (records per log batch): 1 to 4096.
inline constexpr std::uint64_t count_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};
// Sizes in bytes (bytes per log batch): 256 B to 64 MiB.
inline constexpr std::uint64_t byte_bounds[] = {256,       1 << 10, 4 << 10, 16 << 10, 64 << 10,
                                                256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};

}  // namespace weir::metrics
