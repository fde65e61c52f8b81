#include "bench/html_report_writer.h"

#include <fmt/format.h>

#include "bench/report_tables.h"
#include "bench/results_writer.h"
#include "bench/svg_chart_writer.h"

namespace weir::bench {
namespace {

constexpr std::string_view style =
    R"(body{font-family:Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}tr.flag td{background:#fff3cd}
.warn{background:#fdecea;border:1px solid #e0a0a0;padding:.5em 1em}.ok{background:#eaf6ea;border:1px solid #9c9;padding:.5em 1em}
pre{background:#f6f6f6;padding:.6em;white-space:pre-wrap;word-break:break-all}.note{color:#555;margin:.2em 0}
.charts svg{max-width:100%;height:auto;margin:.5em 0})";

std::string table_html(const report_table& t) {
  std::string out = fmt::format("<h3>{}</h3>\n", html_escape(t.title));
  if (!t.note.empty()) out += fmt::format("<p class=\"note\">{}</p>\n", html_escape(t.note));
  out += "<table>\n<tr>";
  for (const auto& h : t.header) out += "<th>" + html_escape(h) + "</th>";
  out += "</tr>\n";
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const bool flag = r < t.flagged.size() && t.flagged[r];
    out += flag ? "<tr class=\"flag\">" : "<tr>";
    for (const auto& c : t.rows[r]) out += "<td>" + html_escape(c) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string kv_table(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string out = "<table>\n";
  for (const auto& [k, v] : rows)
    out += "<tr><td>" + html_escape(k) + "</td><td>" + html_escape(v) + "</td></tr>\n";
  return out + "</table>\n";
}

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string to_html(const bench_report& report) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<title>weir bench report " + html_escape(report.started_at) + "</title>\n";
  out += "<style>" + std::string(style) + "</style>\n</head>\n<body>\n";
  out += "<h1>weir bench report</h1>\n";
  out += fmt::format("<p>Run {} to {}; workloads: {}.</p>\n", html_escape(report.started_at),
                     html_escape(report.finished_at), html_escape([&] {
                       std::string w;
                       for (const auto& x : report.workloads) w += (w.empty() ? "" : ", ") + x;
                       return w.empty() ? std::string("seed") : w;
                     }()));
  out += "<h2>Command</h2>\n<pre>" + html_escape(report.command) + "</pre>\n";

  const auto warnings = report_warnings(report);
  if (warnings.empty()) {
    out +=
        "<p class=\"ok\">No phase saturated the load generator (every thread below 90% of a core); no "
        "errors, "
        "no lost or duplicated events.</p>\n";
  } else {
    out += "<div class=\"warn\"><p><b>Read these first:</b></p>\n<ul>\n";
    for (const auto& w : warnings) out += "<li>" + html_escape(w) + "</li>\n";
    out += "</ul></div>\n";
  }
  const auto summary = summary_table(report);
  if (!summary.rows.empty()) out += "<h2>Summary</h2>\n" + table_html(summary);

  const auto charts = workload_charts(report);
  auto charts_of = [&](std::string_view prefix) {
    std::string html = "<div class=\"charts\">\n";
    for (const auto& c : charts) {
      if (c.key.rfind(prefix, 0) == 0) html += c.svg;
    }
    return html + "</div>\n";
  };
  for (const auto& t : workload_tables(report)) {
    out += table_html(t);
    if (t.title == "Many streams") out += charts_of("many_streams");
    if (t.title == "SSE fan-out") out += charts_of("fanout");
    if (t.title.rfind("Soak: where", 0) == 0) out += charts_of("soak");
  }
  const auto seed = seed_tables(report);
  if (!seed.empty()) {
    out += "<h2>Seed workloads (by concurrency)</h2>\n";
    for (const auto& t : seed) out += table_html(t);
    out += "<div class=\"charts\">\n";
    for (const auto& m : metrics()) out += render_metric_chart(report, m);
    out += "</div>\n";
  }

  out +=
      "<h2>Targets</h2>\n<table>\n<tr><th>Name</th><th>URL</th><th>Server PID</th><th>Server CPU "
      "s</th></tr>\n";
  for (const auto& t : report.targets) {
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(t.name), html_escape(t.url),
        t.server_pid > 0 ? std::to_string(t.server_pid) : std::string("n/a"), format_number(t.server_cpu_s));
  }
  out += "</table>\n";
  if (!report.info.empty()) out += "<h2>Versions</h2>\n" + kv_table(report.info);
  std::vector<std::pair<std::string, std::string>> machine(report.machine.begin(), report.machine.end());
  out += "<h2>Machine</h2>\n" + kv_table(machine);
  std::vector<std::pair<std::string, std::string>> options;
  for (const auto& [k, v] : report.options) options.emplace_back(k, format_number(v));
  out += "<h2>Options</h2>\n" + kv_table(options);
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace weir::bench
