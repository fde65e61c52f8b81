// The bucket layouts of base/metrics.h and how a histogram places a value.
#include "base/metrics.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>

namespace weir::metrics {
namespace {

// A latency bound is 1, 2 or 5 times a power of ten, each the next step up from the one before, so that
// a percentile read off the buckets is within a factor 2.5 (never a 1 ms to 10 ms jump).
TEST(metrics, latency_bounds_step_one_two_five_from_10_us_to_10_s) {
  const auto& b = latency_us_bounds;
  ASSERT_EQ(b[0], 10u);
  ASSERT_EQ(b[std::size(b) - 1], 10'000'000u);
  for (std::size_t i = 0; i < std::size(b); ++i) {
    std::uint64_t mantissa = b[i];
    while (mantissa % 10 == 0) mantissa /= 10;
    EXPECT_TRUE(mantissa == 1 || mantissa == 2 || mantissa == 5) << b[i];
    if (i > 0) {
      const std::uint64_t prev = b[i - 1];
      EXPECT_TRUE(b[i] == 2 * prev || 2 * b[i] == 5 * prev) << prev << " then " << b[i];
    }
  }
}

TEST(metrics, a_value_goes_to_the_first_bound_at_or_above_it) {
  histogram h(latency_us_bounds);
  h.observe(0);           // the first bucket
  h.observe(10);          // equal to a bound: that bucket (le)
  h.observe(11);          // <= 20
  h.observe(1'999);       // <= 2 ms
  h.observe(2'000);       // <= 2 ms
  h.observe(2'001);       // <= 5 ms
  h.observe(10'000'001);  // +Inf
  const histogram_counts c = h.read();
  ASSERT_EQ(c.counts.size(), std::size(latency_us_bounds) + 1);
  EXPECT_EQ(c.counts[0], 2u);
  EXPECT_EQ(c.counts[1], 1u);
  EXPECT_EQ(c.counts[7], 2u);  // 2'000
  EXPECT_EQ(c.counts[8], 1u);  // 5'000
  EXPECT_EQ(c.counts.back(), 1u);
  EXPECT_EQ(c.count(), 7u);
}

TEST(metrics, merged_counts_add_up_bucket_by_bucket) {
  histogram a(count_bounds), b(count_bounds);
  a.observe(1);
  b.observe(1);
  b.observe(100);
  histogram_counts sum;
  sum.merge(a.read());
  sum.merge(b.read());
  EXPECT_EQ(sum.counts[0], 2u);
  EXPECT_EQ(sum.counts[7], 1u);  // <= 128
  EXPECT_EQ(sum.sum, 102u);
}

}  // namespace
}  // namespace weir::metrics
