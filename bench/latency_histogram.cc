#include "bench/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "base/assert.h"

namespace weir::bench {

std::size_t latency_histogram::bucket_of(std::uint64_t us) {
  if (us > max_trackable_us) us = max_trackable_us;
  if (us < sub_bucket_count) return static_cast<std::size_t>(us);
  // Keep the top 8 bits: `shift` drops the rest, leaving a mantissa in [128, 255].
  const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(us));
  const unsigned shift = msb - (sub_bucket_bits - 1);
  const std::uint64_t mantissa = us >> shift;
  return static_cast<std::size_t>(sub_bucket_count + (shift - 1) * half_count + (mantissa - half_count));
}

std::uint64_t latency_histogram::bucket_low(std::size_t index) {
  WEIR_ASSERT(index < bucket_count, "bucket {} out of range {}", index, bucket_count);
  if (index < sub_bucket_count) return index;
  const std::uint64_t j = index - sub_bucket_count;
  const std::uint64_t shift = j / half_count + 1;
  const std::uint64_t mantissa = j % half_count + half_count;
  return mantissa << shift;
}

std::uint64_t latency_histogram::bucket_high(std::size_t index) {
  if (index < sub_bucket_count) return index;
  const std::uint64_t shift = (index - sub_bucket_count) / half_count + 1;
  return bucket_low(index) + (std::uint64_t{1} << shift) - 1;
}

void latency_histogram::record_us(std::uint64_t us) {
  if (us > max_trackable_us) ++saturated_;
  ++counts_[bucket_of(us)];
  ++count_;
  min_ = std::min(min_, us);
  max_ = std::max(max_, us);
  sum_ += us;
}

void latency_histogram::merge(const latency_histogram& other) {
  for (std::size_t i = 0; i < bucket_count; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  saturated_ += other.saturated_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
}

std::uint64_t latency_histogram::percentile_us(double p) const {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < bucket_count; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(bucket_high(i), min_, max_);
  }
  return max_;  // unreachable: the counts add up to count_
}

}  // namespace weir::bench
