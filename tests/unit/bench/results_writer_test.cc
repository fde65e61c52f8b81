#include "bench/results_writer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "bench/results_reader.h"
#include "bench/svg_chart_writer.h"

namespace weir::bench {
namespace {

bench_report sample_report() {
  bench_report r;
  r.tool_version = "weir 0.1.0";
  r.started_at = "2026-01-01T00:00:00Z";
  r.finished_at = "2026-01-01T00:01:00Z";
  r.command = "weir bench --target \"a\"=http://127.0.0.1:1";
  r.machine["cpus"] = "2";
  r.options["payload_bytes"] = 8192;
  r.concurrency = {4, 8};
  r.targets = {{"weir", "http://127.0.0.1:1", {}},
               {"node <ref>", "http://127.0.0.1:2", {"http://127.0.0.1:3"}}};
  for (const auto& t : r.targets) {
    for (unsigned c : r.concurrency) {
      run_result run;
      run.target = t.name;
      run.concurrency = c;
      run.append_p50_ms = 1.25 * c;
      run.append_p99_ms = 2.5 * c;
      run.read_p99_ms = 3.0;
      run.write_mib_s = 100.0 + c;
      run.read_mib_s = 900.5;
      run.small_req_s = 12345;
      run.sse_p50_ms = 0.75;
      // sse_p99_ms stays NaN: a phase that did not produce a figure
      run.error_kinds["read.short"] = c;
      run.error_kinds["sse.missing"] = 1;
      run.counts["appends"] = 100;
      run.client_cpu["write"] = {2.0, 0.5};
      r.runs.push_back(run);
    }
  }
  return r;
}

TEST(results_writer, json_parses_and_has_one_complete_run_per_target_and_level) {
  const auto text = to_json(sample_report());
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS) << text;
  simdjson::dom::array runs;
  ASSERT_EQ(doc["runs"].get_array().get(runs), simdjson::SUCCESS);
  ASSERT_EQ(runs.size(), 4u);
  for (auto run : runs) {
    for (const char* key :
         {"target", "concurrency", "append_p50_ms", "append_p99_ms", "read_p99_ms", "write_mib_s",
          "read_mib_s", "small_req_s", "sse_p50_ms", "sse_p99_ms", "errors"}) {
      EXPECT_EQ(run[key].error(), simdjson::SUCCESS) << key;
    }
    EXPECT_TRUE(run["sse_p99_ms"].is_null());
    std::uint64_t c = 0, errors = 0;
    ASSERT_EQ(run["concurrency"].get_uint64().get(c), simdjson::SUCCESS);
    ASSERT_EQ(run["errors"].get_uint64().get(errors), simdjson::SUCCESS);
    EXPECT_EQ(errors, c + 1);
    double share = 0;
    ASSERT_EQ(run["client_cpu"]["write"]["share"].get_double().get(share), simdjson::SUCCESS);
    EXPECT_DOUBLE_EQ(share, 0.25);
  }
  std::string_view command;
  ASSERT_EQ(doc["command"].get_string().get(command), simdjson::SUCCESS);
  EXPECT_EQ(command, "weir bench --target \"a\"=http://127.0.0.1:1");
  double wmib = 0;
  ASSERT_EQ(runs.at(1)["write_mib_s"].get_double().get(wmib), simdjson::SUCCESS);
  EXPECT_DOUBLE_EQ(wmib, 108.0);
}

TEST(results_reader, reads_back_what_the_writer_wrote) {
  const auto original = sample_report();
  auto back = parse_report(to_json(original));
  ASSERT_TRUE(back.has_value()) << back.err().reason;
  EXPECT_EQ(to_json(*back), to_json(original));
  EXPECT_EQ(to_markdown(*back), to_markdown(original));
  EXPECT_FALSE(parse_report("{\"runs\": []}").has_value());  // no concurrency, no targets
  EXPECT_FALSE(parse_report("not json").has_value());
}

// A saturation run: its ladder, ceiling and figures survive results.json and show in results.md.
TEST(results_reader, a_saturation_run_reads_back_and_renders_its_ceiling) {
  auto original = sample_report();
  original.saturation_streams = {1000};
  saturation_result x;
  x.target = "weir";
  x.protocol = "http";
  x.streams = 1000;
  x.rss_before_mib = 20;
  x.rss_streams_mib = 22;
  x.create_s = 0.5;
  for (unsigned c : {64u, 256u}) {
    saturation_level l;
    l.connections = c;
    l.ops_s = 100.0 * c;
    l.p50_ms = 1;
    l.p99_ms = 4;
    l.p999_ms = 9;
    l.ok = 1000 * c;
    l.server_cpu_s = 1.5;
    l.client = {10, 0.25};
    x.levels.push_back(l);
  }
  x.ceiling = 1;
  x.error_kinds["sat.status_409"] = 2;
  x.cpu = x.levels[1].client;
  original.saturation.push_back(x);
  auto back = parse_report(to_json(original));
  ASSERT_TRUE(back.has_value()) << back.err().reason;
  EXPECT_EQ(to_json(*back), to_json(original));
  const std::string md = to_markdown(*back);
  EXPECT_NE(md.find("**Saturation**"), std::string::npos) << md;
  // "(!)": the row is flagged for its errors.
  EXPECT_NE(md.find("| 1000 (!) | weir | 64: 6400, 256: 25600 | 25600 | 256 |"), std::string::npos) << md;
  EXPECT_NE(md.find("sat.status_409 2"), std::string::npos) << md;
}

TEST(results_writer, markdown_has_a_table_per_level_with_every_target_and_metric) {
  const auto md = to_markdown(sample_report());
  EXPECT_NE(md.find("## Concurrency 4"), std::string::npos);
  EXPECT_NE(md.find("## Concurrency 8"), std::string::npos);
  EXPECT_NE(md.find("| Metric | weir | node <ref> |"), std::string::npos) << md;
  for (const auto& m : metrics()) EXPECT_NE(md.find(m.title), std::string::npos) << m.key;
  EXPECT_NE(md.find("| 108 <sub>cpu 25%</sub> |"), std::string::npos) << md;
  EXPECT_NE(md.find("n/a"), std::string::npos);
}

TEST(results_writer, metric_tables_have_a_row_per_level_and_a_column_per_target) {
  const auto md = metric_tables(sample_report());
  EXPECT_NE(md.find("**Bulk write throughput** (MiB/s, higher is better)"), std::string::npos) << md;
  EXPECT_NE(md.find("| Concurrency | weir | node <ref> |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 4 | 104 | 104 |"), std::string::npos) << md;  // write_mib_s = 100 + c
  EXPECT_NE(md.find("| 8 | 108 | 108 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 8 | n/a | n/a |"), std::string::npos) << md;  // sse_p99_ms never measured
}

TEST(results_writer, format_number_keeps_three_significant_digits_for_small_values) {
  EXPECT_EQ(format_number(1234.56), "1235");
  EXPECT_EQ(format_number(12.345), "12.3");
  EXPECT_EQ(format_number(1.2345), "1.23");
  EXPECT_EQ(format_number(0.12345), "0.123");
  EXPECT_EQ(format_number(3), "3");
  EXPECT_EQ(format_number(no_value), "n/a");
}

TEST(results_writer, writes_json_markdown_and_one_chart_per_metric) {
  const auto dir = std::filesystem::temp_directory_path() / ("weir_results_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(write_results(dir.string(), sample_report()).has_value());
  EXPECT_TRUE(std::filesystem::exists(dir / "results.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "results.md"));
  for (const auto& m : metrics()) {
    std::ifstream f(dir / (std::string(m.key) + ".svg"));
    std::stringstream ss;
    ss << f.rdbuf();
    EXPECT_NE(ss.str().find("</svg>"), std::string::npos) << m.key;
  }
  std::filesystem::remove_all(dir);
}

TEST(svg_chart_writer, nice_axis_rounds_up_to_a_readable_step) {
  EXPECT_DOUBLE_EQ(nice_axis(93).max, 100);
  EXPECT_DOUBLE_EQ(nice_axis(93).step, 20);
  EXPECT_DOUBLE_EQ(nice_axis(1.1).max, 1.25);
  EXPECT_DOUBLE_EQ(nice_axis(1.1).step, 0.25);
  EXPECT_DOUBLE_EQ(nice_axis(100).max, 100);
  EXPECT_DOUBLE_EQ(nice_axis(0).max, 5);
  EXPECT_DOUBLE_EQ(nice_axis(no_value).max, 5);
}

TEST(svg_chart_writer, chart_has_title_units_ticks_legend_and_a_line_per_target) {
  const auto report = sample_report();
  const auto svg = render_metric_chart(report, metrics()[2]);  // write_mib_s
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("Bulk write throughput (MiB/s)"), std::string::npos);
  EXPECT_NE(svg.find(">higher is better<"), std::string::npos);
  EXPECT_NE(svg.find(">MiB/s<"), std::string::npos);
  EXPECT_NE(svg.find(">Concurrency (clients, log scale)<"), std::string::npos);
  EXPECT_NE(svg.find(">4<"), std::string::npos);
  EXPECT_NE(svg.find(">8<"), std::string::npos);
  EXPECT_NE(svg.find(">weir<"), std::string::npos);
  EXPECT_NE(svg.find(">node &lt;ref&gt;<"), std::string::npos);  // escaped
  std::size_t paths = 0;
  for (auto pos = svg.find("<path"); pos != std::string::npos; pos = svg.find("<path", pos + 1)) ++paths;
  EXPECT_EQ(paths, 2u);
}

TEST(svg_chart_writer, values_spanning_decades_get_a_log_axis_with_a_tick_per_decade) {
  chart_spec spec;
  spec.title = "t";
  spec.y_label = "req/s";
  spec.x = {4, 8};
  spec.series = {{"fast", {5000, 9000}}, {"slow", {3, 2}}};
  const auto svg = render_line_chart(spec);
  EXPECT_NE(svg.find(">req/s (log scale)<"), std::string::npos);
  for (const char* tick : {">1<", ">10<", ">100<", ">1000<", ">10000<"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
  spec.series = {{"a", {50, 90}}, {"b", {3, 0}}};  // a zero cannot sit on a log axis: stay linear
  EXPECT_EQ(render_line_chart(spec).find("log scale"), std::string::npos);
}

TEST(svg_chart_writer, missing_points_are_skipped_not_drawn_at_zero) {
  const auto svg = render_metric_chart(sample_report(), metrics()[7]);  // sse_p99_ms: all NaN
  EXPECT_EQ(svg.find("<path"), std::string::npos);
  EXPECT_EQ(svg.find("<circle"), std::string::npos);
}

}  // namespace
}  // namespace weir::bench
