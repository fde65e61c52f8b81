#include "bench/latency_histogram.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace weir::bench {
namespace {

TEST(latency_histogram, empty_reports_zero) {
  latency_histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile_us(50), 0u);
  EXPECT_EQ(h.percentile_us(99), 0u);
  EXPECT_EQ(h.min_us(), 0u);
  EXPECT_EQ(h.max_us(), 0u);
  EXPECT_EQ(h.mean_us(), 0.0);
}

TEST(latency_histogram, small_values_are_exact) {
  latency_histogram h;
  for (std::uint64_t v = 1; v <= 100; ++v) h.record_us(v);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.percentile_us(50), 50u);
  EXPECT_EQ(h.percentile_us(99), 99u);
  EXPECT_EQ(h.percentile_us(100), 100u);
  EXPECT_EQ(h.percentile_us(1), 1u);
  EXPECT_EQ(h.min_us(), 1u);
  EXPECT_EQ(h.max_us(), 100u);
  EXPECT_DOUBLE_EQ(h.mean_us(), 50.5);
}

TEST(latency_histogram, buckets_tile_the_range_without_gaps) {
  // Every bucket starts one past the previous bucket's end, and bucket_of() maps both ends back.
  for (std::size_t i = 1; i < latency_histogram::bucket_count; ++i) {
    ASSERT_EQ(latency_histogram::bucket_low(i), latency_histogram::bucket_high(i - 1) + 1) << i;
    ASSERT_EQ(latency_histogram::bucket_of(latency_histogram::bucket_low(i)), i) << i;
    ASSERT_EQ(latency_histogram::bucket_of(latency_histogram::bucket_high(i)), i) << i;
  }
  EXPECT_EQ(latency_histogram::bucket_high(latency_histogram::bucket_count - 1),
            latency_histogram::max_trackable_us);
}

TEST(latency_histogram, bucket_width_is_within_one_128th_of_its_values) {
  for (std::size_t i = latency_histogram::sub_bucket_count; i < latency_histogram::bucket_count; ++i) {
    const auto low = latency_histogram::bucket_low(i);
    const auto width = latency_histogram::bucket_high(i) - low + 1;
    ASSERT_LE(width * 128, low) << "bucket " << i;
  }
}

TEST(latency_histogram, percentiles_match_sorted_values_within_precision) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(8.0, 1.5);  // median ~3 ms, long tail
  latency_histogram h;
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 20'000; ++i) {
    const auto v = static_cast<std::uint64_t>(dist(rng)) + 1;
    values.push_back(v);
    h.record_us(v);
  }
  std::sort(values.begin(), values.end());
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * values.size()));
    const auto exact = values[std::max<std::size_t>(rank, 1) - 1];
    const auto got = h.percentile_us(p);
    EXPECT_GE(got, exact) << "p" << p;
    EXPECT_LE(got, exact + exact / 128 + 1) << "p" << p;
  }
  EXPECT_EQ(h.max_us(), values.back());
  EXPECT_EQ(h.min_us(), values.front());
}

TEST(latency_histogram, minutes_are_tracked_and_beyond_range_saturates) {
  latency_histogram h;
  const std::uint64_t five_minutes = 5ull * 60 * 1'000'000;
  h.record_us(five_minutes);
  const auto p = h.percentile_us(50);
  EXPECT_LE(p, five_minutes);
  EXPECT_GE(p, five_minutes - five_minutes / 128);
  EXPECT_EQ(h.saturated(), 0u);
  h.record_us(latency_histogram::max_trackable_us + 10);
  EXPECT_EQ(h.saturated(), 1u);
  EXPECT_EQ(h.count(), 2u);
}

TEST(latency_histogram, record_ns_rounds_to_microseconds) {
  latency_histogram h;
  h.record_ns(1'499);
  h.record_ns(1'500);
  EXPECT_EQ(h.min_us(), 1u);
  EXPECT_EQ(h.max_us(), 2u);
}

TEST(latency_histogram, merge_equals_recording_everything_in_one) {
  latency_histogram a, b, all;
  for (std::uint64_t v = 1; v < 5000; v += 7) {
    (v % 2 ? a : b).record_us(v * 13);
    all.record_us(v * 13);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min_us(), all.min_us());
  EXPECT_EQ(a.max_us(), all.max_us());
  EXPECT_DOUBLE_EQ(a.mean_us(), all.mean_us());
  for (double p : {50.0, 90.0, 99.0, 99.99}) EXPECT_EQ(a.percentile_us(p), all.percentile_us(p)) << p;
}

TEST(latency_histogram, one_slow_outlier_moves_p99_only_when_it_is_in_the_top_percent) {
  latency_histogram h;
  for (int i = 0; i < 99; ++i) h.record_us(200);  // below 256: an exact bucket
  h.record_us(2'000'000);
  EXPECT_EQ(h.percentile_us(99), 200u);
  EXPECT_EQ(h.percentile_us(100), 2'000'000u);
  h.record_us(2'000'000);  // now 2 of 101 are slow: p99 lands in the slow bucket
  EXPECT_GE(h.percentile_us(99), 2'000'000u - 2'000'000u / 128);
}

}  // namespace
}  // namespace weir::bench
