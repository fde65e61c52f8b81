#include "bench/results_writer.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "base/json_writer.h"
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
  out += ",\n     \"client_cpu\": " + json_map(r.client_cpu, [](const phase_cpu& c) {
           return fmt::format("{{\"wall_s\": {}, \"cpu_s\": {}, \"share\": {}}}", json_number(c.wall_s),
                              json_number(c.cpu_s), json_number(c.share()));
         });
  return out + "}";
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
  out += fmt::format("  \"schema\": \"weir-bench/1\",\n  \"tool\": {},\n", json_string(report.tool_version));
  out += fmt::format("  \"started_at\": {},\n  \"finished_at\": {},\n", json_string(report.started_at),
                     json_string(report.finished_at));
  out += fmt::format("  \"command\": {},\n", json_string(report.command));
  out += "  \"machine\": " + json_map(report.machine, json_string) + ",\n";
  out += "  \"options\": " + json_map(report.options, json_number) + ",\n";
  out += "  \"concurrency\": [";
  for (std::size_t i = 0; i < report.concurrency.size(); ++i) {
    out += fmt::format("{}{}", i ? ", " : "", report.concurrency[i]);
  }
  out += "],\n  \"targets\": [\n";
  for (std::size_t i = 0; i < report.targets.size(); ++i) {
    const auto& t = report.targets[i];
    out += fmt::format("    {{\"name\": {}, \"url\": {}, \"read_bases\": [", json_string(t.name),
                       json_string(t.url));
    for (std::size_t j = 0; j < t.read_bases.size(); ++j)
      out += (j ? ", " : "") + json_string(t.read_bases[j]);
    out += fmt::format("]}}{}\n", i + 1 < report.targets.size() ? "," : "");
  }
  out += "  ],\n  \"runs\": [\n";
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    out += run_json(report.runs[i]) + (i + 1 < report.runs.size() ? ",\n" : "\n");
  }
  out += "  ]\n}\n";
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
  out +=
      "\nEach cell: the figure, then the benchmark client's own CPU use during that phase (100% = one "
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
  for (const auto& m : metrics()) {
    if (auto s = write(std::string(m.key) + ".svg", render_metric_chart(report, m)); !s) return s;
  }
  return {};
}

}  // namespace weir::bench
