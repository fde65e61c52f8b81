#include "bench/results_writer.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "base/json_writer.h"
#include "bench/html_report_writer.h"
#include "bench/report_tables.h"
#include "bench/svg_chart_writer.h"

namespace weir::bench {
namespace {

// RFC 8259 7 escaping, shared with every other JSON weir writes (base/json_writer).
std::string json_string(std::string_view s) {
  return json_writer::quoted(s);
}

// JSON has no NaN: a phase that did not run is null.
std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:.4f}", v);
}

template <class Map, class Fn>
std::string json_map(const Map& m, Fn&& value) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : m) {
    out += fmt::format("{}{}: {}", first ? "" : ", ", json_string(k), value(v));
    first = false;
  }
  return out + "}";
}

std::string counters_json(const std::map<std::string, std::uint64_t>& m) {
  return json_map(m, [](auto n) { return std::to_string(n); });
}

std::string cpu_json(const phase_cpu& c) {
  return fmt::format("{{\"wall_s\": {}, \"cpu_s\": {}, \"share\": {}}}", json_number(c.wall_s),
                     json_number(c.cpu_s), json_number(c.share()));
}

// The fields every workload result shares: errors, counts, the client's CPU and whether it was saturated.
std::string tally_json(const workload_tally& t) {
  return fmt::format(
      ", \"errors\": {},\n     \"error_kinds\": {},\n     \"counts\": {},\n     \"client_cpu\": {}, "
      "\"generator_threads\": {}, \"client_saturated\": {}}}",
      t.errors(), counters_json(t.error_kinds), counters_json(t.counts), cpu_json(t.cpu), t.threads,
      t.saturated() ? "true" : "false");
}

std::string many_streams_json(const many_streams_result& r) {
  return fmt::format(
             "    {{\"target\": {}, \"streams\": {}, \"writers\": {}, \"ops_s\": {}, \"p50_ms\": {}, "
             "\"p99_ms\": {}",
             json_string(r.target), r.streams, r.writers, json_number(r.ops_s), json_number(r.p50_ms),
             json_number(r.p99_ms)) +
         tally_json(r);
}

std::string fanout_json(const fanout_result& r) {
  return fmt::format(
             "    {{\"target\": {}, \"subscribers\": {}, \"rate_per_s\": {}, \"p50_ms\": {}, "
             "\"p99_ms\": {}, \"max_ms\": {}, \"expected\": {}, \"delivered\": {}, \"lost\": {}, "
             "\"duplicated\": {}",
             json_string(r.target), r.subscribers, json_number(r.rate_per_s), json_number(r.p50_ms),
             json_number(r.p99_ms), json_number(r.max_ms), r.expected, r.delivered, r.lost, r.duplicated) +
         tally_json(r);
}

std::string soak_json(const soak_result& r) {
  const auto d = drift_of(r);
  std::string out = fmt::format(
      "    {{\"target\": {}, \"duration_s\": {}, \"base_t_s\": {}, \"rss_base_mib\": {}, "
      "\"rss_end_mib\": {}, \"rss_change\": {}, \"fds_base\": {}, \"fds_end\": {}, \"fds_change\": {},"
      "\n     \"samples\": [",
      json_string(r.target), json_number(r.duration_s), json_number(d.base_t_s), json_number(d.base_rss_mib),
      json_number(d.end_rss_mib), json_number(d.rss_change()), json_number(d.base_fds),
      json_number(d.end_fds), json_number(d.fds_change()));
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    const auto& s = r.samples[i];
    out += fmt::format(
        "{}\n       {{\"t_s\": {}, \"rss_mib\": {}, \"fds\": {}, \"append_p99_ms\": {}, "
        "\"read_p99_ms\": {}, \"ops_s\": {}, \"client_share\": {}}}",
        i ? "," : "", json_number(s.t_s), json_number(s.rss_mib), json_number(s.fds),
        json_number(s.append_p99_ms), json_number(s.read_p99_ms), json_number(s.ops_s),
        json_number(s.client_share));
  }
  return out + "]" + tally_json(r);
}

std::string saturation_json(const saturation_result& r) {
  std::string out = fmt::format(
      "    {{\"target\": {}, \"protocol\": {}, \"streams\": {}, \"ceiling\": {}, \"rss_before_mib\": {}, "
      "\"rss_streams_mib\": {}, \"kib_per_stream\": {}, \"create_s\": {},\n     \"levels\": [",
      json_string(r.target), json_string(r.protocol), r.streams, r.ceiling, json_number(r.rss_before_mib),
      json_number(r.rss_streams_mib), json_number(r.kib_per_stream()), json_number(r.create_s));
  for (std::size_t i = 0; i < r.levels.size(); ++i) {
    const auto& l = r.levels[i];
    out += fmt::format(
        "{}\n       {{\"connections\": {}, \"ops_s\": {}, \"p50_ms\": {}, \"p99_ms\": {}, \"p999_ms\": {}, "
        "\"ok\": {}, \"errors\": {}, \"server_cpu_s\": {}, \"server_us_per_op\": {}, \"server_rss_mib\": {}, "
        "\"server_cgroup_ws_mib\": {}, \"client_cpu\": {}, \"client_us_per_op\": {}, "
        "\"client_lag_p99_ms\": {}}}",
        i ? "," : "", l.connections, json_number(l.ops_s), json_number(l.p50_ms), json_number(l.p99_ms),
        json_number(l.p999_ms), l.ok, l.errors, json_number(l.server_cpu_s),
        json_number(l.server_us_per_op()), json_number(l.server_rss_mib), json_number(l.server_cgroup_ws_mib),
        cpu_json(l.client), json_number(l.client_us_per_op()), json_number(l.client_lag_p99_ms));
  }
  return out + "]" + tally_json(r);
}

template <class T, class Fn>
std::string json_array(const std::vector<T>& items, Fn&& one) {
  std::string out = "[\n";
  for (std::size_t i = 0; i < items.size(); ++i) out += one(items[i]) + (i + 1 < items.size() ? ",\n" : "\n");
  return out + "  ]";
}

std::string levels_json(const std::vector<unsigned>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", v[i]);
  return out + "]";
}

std::string run_json(const run_result& r) {
  std::string out = "    {";
  out += fmt::format("\"target\": {}, \"concurrency\": {}", json_string(r.target), r.concurrency);
  for (const auto& m : metrics()) {
    if (std::string_view(m.key) == "errors") continue;
    out += fmt::format(", \"{}\": {}", m.key, json_number(m.get(r)));
  }
  out += fmt::format(", \"errors\": {}", r.errors());
  out += ",\n     \"error_kinds\": " + json_map(r.error_kinds, [](auto n) { return std::to_string(n); });
  out += ",\n     \"counts\": " + json_map(r.counts, [](auto n) { return std::to_string(n); });
  out += ",\n     \"client_cpu\": " + json_map(r.client_cpu, cpu_json);
  return out + fmt::format(", \"client_saturated\": {}}}", seed_saturated(r) ? "true" : "false");
}

}  // namespace

std::string format_number(double v) {
  if (!std::isfinite(v)) return "n/a";
  const double a = std::fabs(v);
  if (a >= 100 || v == std::floor(v)) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  if (a >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3f}", v);
}

std::string to_json(const bench_report& report) {
  std::string out = "{\n";
  out += fmt::format("  \"schema\": \"weir-bench/2\",\n  \"tool\": {},\n", json_string(report.tool_version));
  out += fmt::format("  \"started_at\": {},\n  \"finished_at\": {},\n", json_string(report.started_at),
                     json_string(report.finished_at));
  out += fmt::format("  \"command\": {},\n", json_string(report.command));
  out += "  \"machine\": " + json_map(report.machine, json_string) + ",\n";
  out += "  \"options\": " + json_map(report.options, json_number) + ",\n";
  out += "  \"workloads\": [";
  for (std::size_t i = 0; i < report.workloads.size(); ++i)
    out += (i ? ", " : "") + json_string(report.workloads[i]);
  out += "],\n  \"info\": [";
  for (std::size_t i = 0; i < report.info.size(); ++i) {
    out += fmt::format("{}[{}, {}]", i ? ", " : "", json_string(report.info[i].first),
                       json_string(report.info[i].second));
  }
  out += "],\n  \"concurrency\": " + levels_json(report.concurrency);
  out += ",\n  \"stream_levels\": " + levels_json(report.stream_levels);
  out += ",\n  \"subscriber_levels\": " + levels_json(report.subscriber_levels);
  out += ",\n  \"targets\": [\n";
  for (std::size_t i = 0; i < report.targets.size(); ++i) {
    const auto& t = report.targets[i];
    out += fmt::format("    {{\"name\": {}, \"url\": {}, \"read_bases\": [", json_string(t.name),
                       json_string(t.url));
    for (std::size_t j = 0; j < t.read_bases.size(); ++j)
      out += (j ? ", " : "") + json_string(t.read_bases[j]);
    out += fmt::format("], \"server_pid\": {}, \"server_cpu_s\": {}}}{}\n",
                       t.server_pid > 0 ? std::to_string(t.server_pid) : std::string("null"),
                       json_number(t.server_cpu_s), i + 1 < report.targets.size() ? "," : "");
  }
  out += "  ],\n  \"runs\": " + json_array(report.runs, run_json);
  out += ",\n  \"many_streams\": " + json_array(report.many_streams, many_streams_json);
  out += ",\n  \"fanout\": " + json_array(report.fanout, fanout_json);
  out += ",\n  \"soak\": " + json_array(report.soak, soak_json);
  out += ",\n  \"saturation_streams\": " + levels_json(report.saturation_streams);
  out += ",\n  \"saturation\": " + json_array(report.saturation, saturation_json);
  out += "\n}\n";
  return out;
}

static const run_result* find_run(const bench_report& report, const std::string& target, unsigned c) {
  for (const auto& run : report.runs) {
    if (run.target == target && run.concurrency == c) return &run;
  }
  return nullptr;
}

std::string metric_tables(const bench_report& report) {
  std::string out = "## By metric\n";
  for (const auto& m : metrics()) {
    out += fmt::format("\n**{}** ({}{})\n\n| Concurrency |", m.title, m.unit,
                       m.higher_is_better ? ", higher is better" : ", lower is better");
    for (const auto& t : report.targets) out += fmt::format(" {} |", t.name);
    out += "\n|---:|";
    for (std::size_t i = 0; i < report.targets.size(); ++i) out += "---:|";
    out += "\n";
    for (unsigned c : report.concurrency) {
      out += fmt::format("| {} |", c);
      for (const auto& t : report.targets) {
        const run_result* r = find_run(report, t.name, c);
        out += " " + (r ? format_number(m.get(*r)) : std::string("n/a")) + " |";
      }
      out += "\n";
    }
  }
  return out;
}

std::string to_markdown(const bench_report& report) {
  std::string out = "# weir bench results\n\n";
  out += fmt::format("Run {} to {} by `{}`.\n\n", report.started_at, report.finished_at, report.command);
  for (const auto& [k, v] : report.machine) out += fmt::format("- {}: {}\n", k, v);
  for (const auto& [k, v] : report.info) out += fmt::format("- {}: {}\n", k, v);
  out += "\nThe same figures, with the charts inline, are in report.html.\n";
  const auto warnings = report_warnings(report);
  if (!warnings.empty()) {
    out += "\n## Warnings\n\n";
    for (const auto& w : warnings) out += "- " + w + "\n";
  }
  const auto summary = summary_table(report);
  if (!summary.rows.empty()) out += "\n## Summary\n\n" + to_markdown(summary);
  const auto tables = workload_tables(report);
  for (const auto& t : tables) out += "\n" + to_markdown(t);
  for (const auto& c : workload_charts(report)) out += fmt::format("\n![{}]({}.svg)", c.title, c.key);
  if (!tables.empty()) out += "\n";
  if (report.runs.empty()) return out;

  out += "\n# Seed workloads\n\n";
  out +=
      "Each cell: the figure, then the benchmark client's own CPU use during that phase (100% = one "
      "core).\n";
  out +=
      "Errors count every failed request, wrong status, short read and missing event; the kinds are in "
      "results.json.\n";
  out += "\n" + metric_tables(report);
  for (unsigned c : report.concurrency) {
    out += fmt::format("\n## Concurrency {}\n\n| Metric |", c);
    for (const auto& t : report.targets) out += fmt::format(" {} |", t.name);
    out += "\n|---|";
    for (std::size_t i = 0; i < report.targets.size(); ++i) out += "---:|";
    out += "\n";
    for (const auto& m : metrics()) {
      out += fmt::format("| {} ({}{}) |", m.title, m.unit, m.higher_is_better ? ", higher is better" : "");
      for (const auto& t : report.targets) {
        const run_result* r = find_run(report, t.name, c);
        if (!r) {
          out += " n/a |";
          continue;
        }
        out += " " + format_number(m.get(*r));
        if (m.cpu_phase) {
          auto it = r->client_cpu.find(m.cpu_phase);
          if (it != r->client_cpu.end() && std::isfinite(it->second.share())) {
            out += fmt::format(" <sub>cpu {:.0f}%</sub>", 100 * it->second.share());
          }
        }
        out += " |";
      }
      out += "\n";
    }
  }
  out += "\n## Charts\n\n";
  for (const auto& m : metrics()) out += fmt::format("![{}]({}.svg)\n", m.title, m.key);
  return out;
}

status write_results(const std::string& dir, const bench_report& report) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return error{1, fmt::format("cannot create {}: {}", dir, ec.message())};
  auto write = [&](const std::string& name, const std::string& text) -> status {
    const auto path = std::filesystem::path(dir) / name;
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) return error{1, fmt::format("cannot write {}: {}", path.string(), std::strerror(errno))};
    return {};
  };
  if (auto s = write("results.json", to_json(report)); !s) return s;
  if (auto s = write("results.md", to_markdown(report)); !s) return s;
  if (!report.runs.empty()) {
    for (const auto& m : metrics()) {
      if (auto s = write(std::string(m.key) + ".svg", render_metric_chart(report, m)); !s) return s;
    }
  }
  for (const auto& c : workload_charts(report)) {
    if (auto s = write(c.key + ".svg", c.svg); !s) return s;
  }
  return write("report.html", to_html(report));
}

}  // namespace weir::bench
