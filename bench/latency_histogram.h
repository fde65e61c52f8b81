// latency_histogram: an HDR-style log-linear histogram of durations in microseconds. Values below 256 us
// are counted exactly (1 us buckets); above, every power of two is split into 128 linear buckets, so a
// bucket is never wider than 1/128 (0.8%) of its values. It tracks up to 2^32 us (71 minutes); longer
// values land in the last bucket and are counted in saturated(). Percentiles are computed from the
// buckets (never from a sample); min, max, count and mean are exact.
//
// Owned by one workload on one thread; merge() combines per-connection histograms afterwards.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace weir::bench {

class latency_histogram {
 public:
  static constexpr unsigned sub_bucket_bits = 8;
  static constexpr std::uint64_t sub_bucket_count = 1u << sub_bucket_bits;  // 256 exact buckets
  static constexpr std::uint64_t half_count = sub_bucket_count / 2;         // 128 per power of two
  static constexpr unsigned max_value_bits = 32;
  static constexpr std::uint64_t max_trackable_us = (std::uint64_t{1} << max_value_bits) - 1;
  static constexpr std::size_t bucket_count =
      sub_bucket_count + (max_value_bits - sub_bucket_bits) * half_count;

  void record_us(std::uint64_t us);
  void record_ns(std::uint64_t ns) { record_us((ns + 500) / 1000); }
  void merge(const latency_histogram& other);
  void clear() { *this = latency_histogram{}; }

  std::uint64_t count() const { return count_; }
  std::uint64_t saturated() const { return saturated_; }
  std::uint64_t min_us() const { return count_ ? min_ : 0; }
  std::uint64_t max_us() const { return max_; }
  double mean_us() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0; }

  // The value at percentile p (0 < p <= 100): the highest value that shares a bucket with the
  // ceil(p% * count)-th smallest recorded value, capped at max_us(). 0 when empty.
  std::uint64_t percentile_us(double p) const;
  double percentile_ms(double p) const { return static_cast<double>(percentile_us(p)) / 1000.0; }

  // Bucket arithmetic, public for tests.
  static std::size_t bucket_of(std::uint64_t us);
  static std::uint64_t bucket_low(std::size_t index);
  static std::uint64_t bucket_high(std::size_t index);  // inclusive

 private:
  std::array<std::uint64_t, bucket_count> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t saturated_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  std::uint64_t sum_ = 0;
};

}  // namespace weir::bench
