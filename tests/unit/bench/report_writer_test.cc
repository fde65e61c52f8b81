// The report writers for the many-streams, fan-out and soak workloads: results.json sections that
// read back, the summary's winners, the soak's drift, and report.html's content and warnings.
#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "bench/html_report_writer.h"
#include "bench/report_tables.h"
#include "bench/results_reader.h"
#include "bench/results_writer.h"
#include "bench/svg_chart_writer.h"

namespace weir::bench {
namespace {

soak_result soak_of(std::string target, double secs, double rss0, double rss_slope) {
  soak_result s;
  s.target = std::move(target);
  s.duration_s = secs;
  for (double t = 10; t <= secs + 1e-9; t += 10) {
    soak_sample x;
    x.t_s = t;
    x.rss_mib = rss0 + rss_slope * t;
    x.fds = 40;
    x.append_p99_ms = 1.5;
    x.read_p99_ms = 2.5;
    x.ops_s = 900;
    x.client_share = 0.05;
    s.samples.push_back(x);
  }
  s.counts["appends"] = 1000;
  s.cpu = {secs, 0.05 * secs};
  return s;
}

bench_report sample_report() {
  bench_report r;
  r.started_at = "2026-12-01T11:00:00Z";
  r.finished_at = "2026-12-01T11:20:00Z";
  r.command = "weir bench --target 'a<b'=http://127.0.0.1:1 --workloads all";
  r.machine["cpus"] = "2";
  r.info = {{"weir", "abc123"}, {"durable-streams", "0.3.7"}};
  r.workloads = {"many-streams", "fanout", "soak"};
  r.options["append_bytes"] = 1024;
  r.targets = {{"weir", "http://127.0.0.1:1", {}, 101, 12.5}, {"ref", "http://127.0.0.1:2", {}, 0, no_value}};
  r.stream_levels = {500, 2000};
  r.subscriber_levels = {1000};
  for (unsigned n : r.stream_levels) {
    many_streams_result m;
    m.target = "weir";
    m.streams = n;
    m.writers = 64;
    m.ops_s = 45'000;
    m.p50_ms = 1.2;
    m.p99_ms = 4.0;
    m.cpu = {15, 6};
    r.many_streams.push_back(m);
    m.target = "ref";
    m.ops_s = 3'000;
    m.p99_ms = 80;
    m.error_kinds["many.status_404"] = 3;
    r.many_streams.push_back(m);
  }
  fanout_result f;
  f.target = "weir";
  f.subscribers = 1000;
  f.rate_per_s = 20;
  f.p50_ms = 2;
  f.p99_ms = 6;
  f.max_ms = 9;
  f.expected = f.delivered = 200'000;
  f.cpu = {10, 9.5};  // 95% of the one generator thread: saturated
  r.fanout.push_back(f);
  f.target = "ref";
  f.p99_ms = 7;
  f.delivered = 199'990;
  f.lost = 10;
  f.duplicated = 2;
  f.error_kinds["fanout.missing"] = 10;
  f.error_kinds["fanout.duplicate"] = 2;
  f.cpu = {10, 4};
  r.fanout.push_back(f);
  r.soak.push_back(soak_of("weir", 180, 20, 0));
  r.soak.push_back(soak_of("ref", 180, 100, 0.5));
  return r;
}

TEST(report_writer, json_sections_have_the_same_fields_for_every_target_and_read_back) {
  const auto report = sample_report();
  const auto text = to_json(report);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS) << text;
  simdjson::dom::array arr;
  ASSERT_EQ(doc["many_streams"].get_array().get(arr), simdjson::SUCCESS);
  EXPECT_EQ(arr.size(), 4u);
  for (auto e : arr) {
    for (const char* k : {"target", "streams", "writers", "ops_s", "p50_ms", "p99_ms", "errors",
                          "error_kinds", "client_cpu", "client_saturated"})
      EXPECT_EQ(e[k].error(), simdjson::SUCCESS) << k;
  }
  ASSERT_EQ(doc["fanout"].get_array().get(arr), simdjson::SUCCESS);
  for (auto e : arr) {
    for (const char* k : {"subscribers", "rate_per_s", "p50_ms", "p99_ms", "max_ms", "expected", "delivered",
                          "lost", "duplicated", "client_saturated"})
      EXPECT_EQ(e[k].error(), simdjson::SUCCESS) << k;
  }
  bool saturated = false;
  ASSERT_EQ(arr.at(0)["client_saturated"].get_bool().get(saturated), simdjson::SUCCESS);
  EXPECT_TRUE(saturated);
  ASSERT_EQ(arr.at(1)["client_saturated"].get_bool().get(saturated), simdjson::SUCCESS);
  EXPECT_FALSE(saturated);

  auto back = parse_report(text);
  ASSERT_TRUE(back.has_value()) << back.err().reason;
  EXPECT_EQ(back->workloads, report.workloads);
  EXPECT_EQ(back->info, report.info);
  EXPECT_EQ(back->stream_levels, report.stream_levels);
  EXPECT_EQ(back->subscriber_levels, report.subscriber_levels);
  ASSERT_EQ(back->many_streams.size(), 4u);
  EXPECT_DOUBLE_EQ(back->many_streams[1].ops_s, 3000);
  EXPECT_EQ(back->many_streams[1].error_kinds.at("many.status_404"), 3u);
  ASSERT_EQ(back->fanout.size(), 2u);
  EXPECT_EQ(back->fanout[1].lost, 10u);
  EXPECT_EQ(back->fanout[1].duplicated, 2u);
  EXPECT_TRUE(back->fanout[0].saturated());
  ASSERT_EQ(back->soak.size(), 2u);
  EXPECT_EQ(back->soak[1].samples.size(), 18u);
  EXPECT_DOUBLE_EQ(back->soak[1].samples.back().rss_mib, 190);
  EXPECT_EQ(back->targets[0].server_pid, 101);
  EXPECT_DOUBLE_EQ(back->targets[0].server_cpu_s, 12.5);
  // Written again, it is the same text (--render-only loses nothing).
  EXPECT_EQ(to_json(*back), text);
}

TEST(report_writer, soak_drift_compares_the_end_with_the_first_minute_or_half_a_short_run) {
  const auto ref = drift_of(soak_of("ref", 180, 100, 0.5));
  EXPECT_DOUBLE_EQ(ref.base_t_s, 60);
  EXPECT_DOUBLE_EQ(ref.base_rss_mib, 130);
  EXPECT_DOUBLE_EQ(ref.end_rss_mib, 190);
  EXPECT_NEAR(ref.rss_change(), 60.0 / 130.0, 1e-12);
  EXPECT_DOUBLE_EQ(ref.fds_change(), 0);
  const auto short_run = drift_of(soak_of("x", 60, 10, 1));
  EXPECT_DOUBLE_EQ(short_run.base_t_s, 30);
  EXPECT_TRUE(std::isnan(drift_of(soak_result{}).rss_change()));
}

TEST(report_writer, summary_names_the_winner_and_its_margin) {
  const auto t = summary_table(sample_report());
  ASSERT_EQ(t.header.back(), "Best");
  auto row_of = [&](const std::string& figure) -> const std::vector<std::string>* {
    for (const auto& row : t.rows) {
      if (row[1] == figure) return &row;
    }
    return nullptr;
  };
  const auto* ops = row_of("500 streams: appends/s");
  ASSERT_NE(ops, nullptr);
  EXPECT_EQ(ops->back(), "weir (15x)");
  const auto* p99 = row_of("2000 streams: p99 ms");
  ASSERT_NE(p99, nullptr);
  EXPECT_EQ(p99->back(), "weir (20x)");
  const auto* fan = row_of("1000 subscribers: delivery p99 ms");
  ASSERT_NE(fan, nullptr);
  EXPECT_EQ((*fan)[2], "6");
  EXPECT_EQ(fan->back(), "weir (1.17x)");
  const auto* rss = row_of("RSS growth after the first minute");
  ASSERT_NE(rss, nullptr);
  EXPECT_EQ((*rss)[2], "+0.0%");
  EXPECT_EQ((*rss)[3], "+46.2%");
}

TEST(report_writer, html_is_one_self_contained_page_with_tables_charts_and_warnings) {
  const auto report = sample_report();
  const auto html = to_html(report);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  // The command, escaped; the versions and the machine.
  EXPECT_NE(html.find("--target &#39;a&lt;b&#39;=http://127.0.0.1:1"), std::string::npos);
  EXPECT_EQ(html.find("'a<b'"), std::string::npos);
  EXPECT_NE(html.find("<td>abc123</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>cpus</td><td>2</td>"), std::string::npos);
  // Inline charts (no external files) for every workload that ran.
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // The many-streams chart names the append size the run used.
  for (const char* title : {"Many streams: 1024 B appends", "SSE fan-out: delivery p99",
                            "Soak: server resident memory", "Soak: server open descriptors"}) {
    EXPECT_NE(html.find(title), std::string::npos) << title;
  }
  std::size_t svgs = 0;
  for (auto p = html.find("<svg"); p != std::string::npos; p = html.find("<svg", p + 1)) ++svgs;
  EXPECT_EQ(svgs, workload_charts(report).size());
  // The saturated generator and the lost events are flagged first.
  const auto warn = html.find("class=\"warn\"");
  ASSERT_NE(warn, std::string::npos);
  EXPECT_LT(warn, html.find("<h2>Summary</h2>"));
  EXPECT_NE(html.find("fanout weir at 1000 subscribers: the load generator was saturated (95%"),
            std::string::npos);
  EXPECT_NE(html.find("fanout ref at 1000 subscribers: 10 events lost, 2 duplicated"), std::string::npos);
  EXPECT_NE(html.find("many-streams ref at 500 streams: 3 errors (many.status_404 3)"), std::string::npos);
  EXPECT_EQ(html.find("fanout ref at 1000 subscribers: the load generator was saturated"), std::string::npos);
  EXPECT_NE(html.find("95% (saturated)"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"flag\">"), std::string::npos);
}

TEST(report_writer, a_clean_run_says_so_instead_of_warning) {
  auto report = sample_report();
  report.fanout.clear();
  report.subscriber_levels.clear();
  for (auto& m : report.many_streams) m.error_kinds.clear();
  const auto html = to_html(report);
  EXPECT_EQ(html.find("class=\"warn\""), std::string::npos);
  EXPECT_NE(html.find("class=\"ok\""), std::string::npos);
  EXPECT_EQ(html.find("SSE fan-out"), std::string::npos);  // a workload that did not run has no section
  EXPECT_TRUE(report_warnings(report).empty());
}

TEST(report_writer, markdown_carries_the_same_tables) {
  const auto md = to_markdown(sample_report());
  EXPECT_NE(md.find("**Who won where**"), std::string::npos);
  EXPECT_NE(md.find("| 500 (!) | ref | 64 | 3000 | 1.20 | 80 | 3 | 40% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1000 (!) | weir | 20 | 2 | 6 | 9 | 200000/200000 | 0 | 0 | 0 | 95% (saturated) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("![Soak: server resident memory](soak_rss_mib.svg)"), std::string::npos);
  EXPECT_EQ(md.find("# Seed workloads"), std::string::npos);  // no seed runs
}

TEST(report_writer, soak_charts_use_a_linear_time_axis) {
  for (const auto& c : workload_charts(sample_report())) {
    if (c.key != "soak_rss_mib") continue;
    EXPECT_NE(c.svg.find("Seconds into the soak"), std::string::npos);
    EXPECT_NE(c.svg.find(">0<"), std::string::npos);  // the axis starts at 0
    return;
  }
  FAIL() << "no soak_rss_mib chart";
}

}  // namespace
}  // namespace weir::bench
