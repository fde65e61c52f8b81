// node_metrics: what each finished exchange adds (per core, summed at scrape), the live-reader gauge,
// the kinds requests are counted under, and the families rendered from the gathered shard figures.
// The whole node's scrape, parsed by a real parser, is tests/integration/metrics.
#include "server/node_metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace weir::server {
namespace {

http::exchange_record record(request_kind k, int status, std::uint64_t in, std::uint64_t out,
                             std::uint64_t head_us) {
  http::exchange_record r;
  r.tag = tag_of(k);
  r.status = status;
  r.bytes_in = in;
  r.bytes_out = out;
  r.head_ns = head_us * 1000;
  r.total_ns = r.head_ns;
  return r;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(node_metrics, requests_from_every_core_add_up_by_operation_and_status) {
  node_metrics m(true);
  m.set_cores(2);
  m.finished(0, record(request_kind::append, 204, 100, 200, 40));
  m.finished(1, record(request_kind::append, 204, 100, 200, 300));
  m.finished(1, record(request_kind::append, 503, 50, 60, 10));
  m.finished(0, record(request_kind::read, 404, 10, 20, 5));
  m.finished(0, record(request_kind::other, 400, 0, 30, 0));
  m.finished(1, record(request_kind::read, 0, 10, 0, 7));  // the client left first
  const std::string t = m.render({});
  EXPECT_TRUE(has_line(t, "weir_http_requests_total{op=\"append\",code=\"204\"} 2")) << t;
  EXPECT_TRUE(has_line(t, "weir_http_requests_total{op=\"append\",code=\"503\"} 1"));
  EXPECT_TRUE(has_line(t, "weir_http_requests_total{op=\"read\",code=\"404\"} 1"));
  EXPECT_TRUE(has_line(t, "weir_http_requests_total{op=\"read\",code=\"0\"} 1"));
  EXPECT_TRUE(has_line(t, "weir_http_requests_total{op=\"other\",code=\"400\"} 1"));
  EXPECT_TRUE(has_line(t, "weir_http_request_errors_total{op=\"append\",class=\"5xx\"} 1"));
  EXPECT_TRUE(has_line(t, "weir_http_request_errors_total{op=\"read\",class=\"4xx\"} 1"));
  EXPECT_TRUE(has_line(t, "weir_http_request_bytes_total{op=\"append\"} 250"));
  EXPECT_TRUE(has_line(t, "weir_http_response_bytes_total{op=\"append\"} 460"));
  // 40 us and 10 us are under 50 us; 300 us under 500 us.
  EXPECT_TRUE(has_line(t, "weir_http_request_duration_seconds_bucket{op=\"append\",le=\"5e-05\"} 2"));
  EXPECT_TRUE(has_line(t, "weir_http_request_duration_seconds_bucket{op=\"append\",le=\"5e-04\"} 3"));
  EXPECT_TRUE(has_line(t, "weir_http_request_duration_seconds_count{op=\"append\"} 3"));
  EXPECT_TRUE(has_line(t, "weir_http_request_duration_seconds_sum{op=\"append\"} 0.00035"));
  EXPECT_EQ(t.find("op=\"create\""), std::string::npos) << "operations never seen are left out";
}

TEST(node_metrics, live_readers_count_those_started_and_not_yet_finished) {
  node_metrics m(true);
  m.set_cores(2);
  m.live_started(0, request_kind::long_poll);
  m.live_started(1, request_kind::long_poll);
  m.live_started(1, request_kind::sse);
  m.live_started(1, request_kind::read);  // not a live kind: ignored
  m.finished(1, record(request_kind::long_poll, 204, 1, 1, 1));
  const std::string t = m.render({});
  EXPECT_TRUE(has_line(t, "weir_live_readers{kind=\"long_poll\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "weir_live_readers{kind=\"sse\"} 1"));
}

TEST(node_metrics, without_counting_only_the_gathered_figures_are_rendered) {
  node_metrics m(false);
  m.set_cores(2);
  m.finished(0, record(request_kind::append, 204, 1, 1, 1));  // ignored, no crash
  node_figures f;
  f.http.open_connections = 3;
  f.http.h2_connections = 2;
  f.http.h2_streams = 9;
  shard_figures a, b;
  a.streams = 2;
  b.streams = 5;
  a.durable = true;
  a.log.segments = 1;
  a.log.segment_bytes = 100;
  b.log.segments = 2;
  b.log.segment_bytes = 50;
  a.log.batch_records.counts = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  a.log.batch_records.sum = 1;
  f.shards = {a, b};
  f.subscriptions = true;
  f.deliveries_ok = 4;
  const std::string t = m.render(f);
  EXPECT_EQ(t.find("weir_http_requests_total"), std::string::npos);
  EXPECT_TRUE(has_line(t, "weir_http_connections_open 3")) << t;
  EXPECT_TRUE(has_line(t, "weir_http2_connections_total 2"));
  EXPECT_TRUE(has_line(t, "weir_http2_streams_total 9"));
  EXPECT_TRUE(has_line(t, "weir_streams 7"));
  EXPECT_TRUE(has_line(t, "weir_log_segments 3"));
  EXPECT_TRUE(has_line(t, "weir_log_segment_bytes 150"));
  EXPECT_TRUE(has_line(t, "weir_log_batch_records_bucket{le=\"1\"} 1"));
  EXPECT_TRUE(has_line(t, "weir_log_batch_records_count 1"));
  EXPECT_TRUE(has_line(t, "weir_subscription_deliveries_total{result=\"ok\"} 4"));
}

// Loop lag arrives as every core's counts added up (node_scrape.cc) and renders in 1-2-5 steps.
TEST(node_metrics, loop_lag_renders_in_one_two_five_steps) {
  node_metrics m(false);
  m.set_cores(2);
  node_figures f;
  metrics::histogram a(metrics::latency_us_bounds), b(metrics::latency_us_bounds);
  a.observe(15);      // <= 20 us
  a.observe(1'500);   // <= 2 ms
  b.observe(30'000);  // <= 50 ms
  f.loop_lag_us.merge(a.read());
  f.loop_lag_us.merge(b.read());
  const std::string t = m.render(f);
  EXPECT_TRUE(has_line(t, "weir_event_loop_lag_seconds_bucket{le=\"1e-05\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "weir_event_loop_lag_seconds_bucket{le=\"2e-05\"} 1"));
  EXPECT_TRUE(has_line(t, "weir_event_loop_lag_seconds_bucket{le=\"0.001\"} 1"));
  EXPECT_TRUE(has_line(t, "weir_event_loop_lag_seconds_bucket{le=\"0.002\"} 2"));
  EXPECT_TRUE(has_line(t, "weir_event_loop_lag_seconds_bucket{le=\"0.02\"} 2"));
  EXPECT_TRUE(has_line(t, "weir_event_loop_lag_seconds_bucket{le=\"0.05\"} 3"));
  EXPECT_TRUE(has_line(t, "weir_event_loop_lag_seconds_bucket{le=\"+Inf\"} 3"));
  EXPECT_TRUE(has_line(t, "weir_event_loop_lag_seconds_count 3"));
}

TEST(node_metrics, the_log_families_appear_only_for_a_durable_node) {
  node_metrics m(true);
  m.set_cores(1);
  node_figures f;
  f.shards.resize(1);  // durable = false: memory only
  EXPECT_EQ(m.render(f).find("weir_log_segments"), std::string::npos);
}

TEST(node_metrics, process_figures_come_from_proc) {
  const process_figures p = read_process_figures();
  ASSERT_TRUE(p.known);
  EXPECT_GT(p.resident_bytes, 0u);
  EXPECT_GE(p.virtual_bytes, p.resident_bytes);
  EXPECT_GE(p.open_fds, 3u);  // at least the standard streams
  EXPECT_GE(p.max_fds, p.open_fds);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // Started before now, and not before this test binary could have been started (an hour ago is plenty).
  EXPECT_LE(p.start_time_seconds, now + 1);
  EXPECT_GT(p.start_time_seconds, now - 3600);
  node_metrics m(false);
  node_figures f;
  f.process = p;
  const std::string t = m.render(f);
  EXPECT_NE(t.find("\nprocess_resident_memory_bytes " + std::to_string(p.resident_bytes) + "\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("# TYPE process_cpu_seconds_total counter\n"), std::string::npos);
}

TEST(node_metrics, requests_are_counted_under_what_they_were) {
  protocol::stream_request r;
  r.op = protocol::operation::create;
  EXPECT_EQ(kind_of(r), request_kind::create);
  r.fork = protocol::fork_request{};
  EXPECT_EQ(kind_of(r), request_kind::fork);
  r.op = protocol::operation::append;
  EXPECT_EQ(kind_of(r), request_kind::append);
  r.closed = true;
  EXPECT_EQ(kind_of(r), request_kind::close);
  r.op = protocol::operation::read;
  EXPECT_EQ(kind_of(r), request_kind::read);
  r.live = protocol::live_mode::long_poll;
  EXPECT_EQ(kind_of(r), request_kind::long_poll);
  r.live = protocol::live_mode::sse;
  EXPECT_EQ(kind_of(r), request_kind::sse);
  r.op = protocol::operation::remove;
  EXPECT_EQ(kind_of(r), request_kind::remove);
  EXPECT_EQ(kind_name(request_kind::remove), "delete");
  EXPECT_EQ(kind_of(http::method::post), request_kind::append);
  EXPECT_EQ(kind_of(http::method::patch), request_kind::other);
}

}  // namespace
}  // namespace weir::server
