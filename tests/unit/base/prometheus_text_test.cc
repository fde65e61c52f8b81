// The Prometheus text format as written by metrics::prometheus_text (exposition format 0.0.4), and the
// single-writer counters and histograms of base/metrics.h. A parse of the whole server's output with a
// real parser is in tests/integration/metrics.
#include "base/prometheus_text.h"

#include <gtest/gtest.h>

#include <limits>
#include <thread>

namespace weir::metrics {
namespace {

TEST(prometheus_text, help_and_type_lines_then_samples) {
  prometheus_text t;
  t.family("weir_requests_total", metric_type::counter, "Requests answered.");
  t.sample("weir_requests_total", {{"op", "append"}, {"code", "204"}}, 7);
  t.sample("weir_requests_total", {}, 0);
  t.family("weir_streams", metric_type::gauge, "Streams.");
  t.sample("weir_streams", {}, 12);
  EXPECT_EQ(t.str(),
            "# HELP weir_requests_total Requests answered.\n"
            "# TYPE weir_requests_total counter\n"
            "weir_requests_total{op=\"append\",code=\"204\"} 7\n"
            "weir_requests_total 0\n"
            "# HELP weir_streams Streams.\n"
            "# TYPE weir_streams gauge\n"
            "weir_streams 12\n");
}

TEST(prometheus_text, label_values_escape_backslash_quote_and_line_feed) {
  prometheus_text t;
  t.sample("m", {{"path", "a\\b\"c\nd"}}, 1);
  EXPECT_EQ(t.str(), "m{path=\"a\\\\b\\\"c\\nd\"} 1\n");
  std::string v;
  prometheus_text::append_label_value(v, "plain /v1/stream é");
  EXPECT_EQ(v, "plain /v1/stream é");  // UTF-8 passes as is
}

TEST(prometheus_text, help_text_escapes_backslash_and_line_feed_but_not_quotes) {
  prometheus_text t;
  t.family("m", metric_type::gauge, "one\\two\n\"three\"");
  EXPECT_EQ(t.str(), "# HELP m one\\\\two\\n\"three\"\n# TYPE m gauge\n");
}

TEST(prometheus_text, numbers_in_the_formats_spelling) {
  std::string s;
  prometheus_text::append_number(s, std::numeric_limits<double>::infinity());
  s += ' ';
  prometheus_text::append_number(s, -std::numeric_limits<double>::infinity());
  s += ' ';
  prometheus_text::append_number(s, std::numeric_limits<double>::quiet_NaN());
  s += ' ';
  prometheus_text::append_number(s, 0.00005);
  s += ' ';
  prometheus_text::append_number(s, 2.5);
  s += ' ';
  prometheus_text::append_number(s, 10);
  EXPECT_EQ(s, "+Inf -Inf NaN 5e-05 2.5 10");
}

TEST(prometheus_text, histogram_buckets_are_cumulative_and_end_at_inf_with_sum_and_count) {
  static constexpr std::uint64_t bounds[] = {100, 1000};
  histogram h(bounds);
  h.observe(50);    // <= 100
  h.observe(100);   // a value equal to a bound counts in that bucket (le)
  h.observe(101);   // <= 1000
  h.observe(5000);  // +Inf only
  const histogram_counts c = h.read();
  EXPECT_EQ(c.counts, (std::vector<std::uint64_t>{2, 1, 1}));
  EXPECT_EQ(c.sum, 5251u);
  EXPECT_EQ(c.count(), 4u);

  prometheus_text t;
  t.family("lat_seconds", metric_type::histogram, "Latency.");
  const label op[] = {{"op", "read"}};
  t.histogram("lat_seconds", op, bounds, c, 1'000'000);
  // Bounds print in the shortest form that reads back the same (1e-04: what Go's ParseFloat reads).
  EXPECT_EQ(t.str(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{op=\"read\",le=\"1e-04\"} 2\n"
            "lat_seconds_bucket{op=\"read\",le=\"0.001\"} 3\n"
            "lat_seconds_bucket{op=\"read\",le=\"+Inf\"} 4\n"
            "lat_seconds_sum{op=\"read\"} 0.005251\n"
            "lat_seconds_count{op=\"read\"} 4\n");
}

TEST(prometheus_text, an_unscaled_histogram_has_an_integer_sum_and_an_empty_one_zeros) {
  static constexpr std::uint64_t bounds[] = {1, 4};
  prometheus_text t;
  t.histogram("batch_records", {}, bounds, histogram_counts{});
  EXPECT_EQ(t.str(),
            "batch_records_bucket{le=\"1\"} 0\n"
            "batch_records_bucket{le=\"4\"} 0\n"
            "batch_records_bucket{le=\"+Inf\"} 0\n"
            "batch_records_sum 0\n"
            "batch_records_count 0\n");
}

TEST(metrics, histogram_counts_merge_adds_bucket_by_bucket) {
  static constexpr std::uint64_t bounds[] = {10};
  histogram a(bounds), b(bounds);
  a.observe(1);
  b.observe(1);
  b.observe(20);
  histogram_counts sum;
  sum.merge(a.read());
  sum.merge(b.read());
  EXPECT_EQ(sum.counts, (std::vector<std::uint64_t>{2, 1}));
  EXPECT_EQ(sum.sum, 22u);
}

TEST(metrics, shared_writers_lose_nothing) {
  static constexpr std::uint64_t bounds[] = {10};
  histogram h(bounds);
  counter c;
  auto work = [&] {
    for (int i = 0; i < 100'000; ++i) {
      h.observe_shared(1);
      c.add_shared();
    }
  };
  std::thread t1(work), t2(work);
  t1.join();
  t2.join();
  EXPECT_EQ(h.read().count(), 200'000u);
  EXPECT_EQ(c.get(), 200'000u);
}

TEST(metrics, single_writer_counter_is_read_from_another_thread) {
  counter c;
  std::thread w([&] {
    for (int i = 0; i < 1000; ++i) c.add(2);
  });
  w.join();  // join: the reader sees every store
  EXPECT_EQ(c.get(), 2000u);
}

}  // namespace
}  // namespace weir::metrics
