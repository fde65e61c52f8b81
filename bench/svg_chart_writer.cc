#include "bench/svg_chart_writer.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/results_writer.h"

namespace weir::bench {
namespace {

constexpr double width = 760, height = 440;
constexpr double left = 80, right = 180, top = 64, bottom = 64;
constexpr const char* palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

axis_scale nice_axis(double max, int ticks) {
  if (!std::isfinite(max) || max <= 0) return {1.0 * ticks, 1.0};
  const double raw = max / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double f : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (f * mag >= raw * (1 - 1e-9)) {
      step = f * mag;
      break;
    }
  }
  return {step * std::ceil(max / step - 1e-9), step};
}

std::string render_line_chart(const chart_spec& spec) {
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  double ymax_data = 0, ymin_positive = 0;
  bool all_positive = true;
  for (const auto& s : spec.series) {
    for (double v : s.y) {
      if (!std::isfinite(v)) continue;
      ymax_data = std::max(ymax_data, v);
      if (v <= 0) all_positive = false;
      if (v > 0 && (ymin_positive == 0 || v < ymin_positive)) ymin_positive = v;
    }
  }
  // Peers can differ by orders of magnitude: past two decades, a log axis keeps every line readable.
  const bool log_y = all_positive && ymin_positive > 0 && ymax_data / ymin_positive > 100;
  const auto y_axis = nice_axis(ymax_data);
  const double log_lo = log_y ? std::floor(std::log10(ymin_positive)) : 0;
  const double log_hi = log_y ? std::max(std::ceil(std::log10(ymax_data)), log_lo + 1) : 1;
  // x: log2 of concurrency, so 4, 8, ..., 256 are evenly spaced.
  // Linear x (time): from 0 to a nice maximum.
  double xmin = 0, xmax = 1;
  axis_scale x_axis{1, 1};
  if (!spec.x.empty()) {
    if (spec.log_x) {
      xmin = std::log2(*std::min_element(spec.x.begin(), spec.x.end()));
      xmax = std::log2(*std::max_element(spec.x.begin(), spec.x.end()));
    } else {
      x_axis = nice_axis(*std::max_element(spec.x.begin(), spec.x.end()), 6);
      xmax = x_axis.max;
    }
  }
  auto px = [&](double x) {
    if (xmax <= xmin) return left + plot_w / 2;
    const double v = spec.log_x ? std::log2(x) : x;
    return left + (v - xmin) / (xmax - xmin) * plot_w;
  };
  auto py = [&](double y) {
    if (log_y) return top + plot_h - (std::log10(y) - log_lo) / (log_hi - log_lo) * plot_h;
    return top + plot_h - y / y_axis.max * plot_h;
  };

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
  out += fmt::format(
      "<text x=\"{}\" y=\"24\" font-size=\"16\" font-weight=\"bold\" text-anchor=\"middle\">{}</text>\n",
      left + plot_w / 2, xml_escape(spec.title));
  if (!spec.note.empty()) {
    out += fmt::format("<text x=\"{}\" y=\"42\" fill=\"#555\" text-anchor=\"middle\">{}</text>\n",
                       left + plot_w / 2, xml_escape(spec.note));
  }
  // Grid and y ticks.
  std::vector<double> y_ticks;
  if (log_y) {
    for (double e = log_lo; e <= log_hi + 1e-9; e += 1) y_ticks.push_back(std::pow(10.0, e));
  } else {
    const int n = static_cast<int>(std::lround(y_axis.max / y_axis.step));
    for (int i = 0; i <= n; ++i) y_ticks.push_back(i * y_axis.step);
  }
  for (double v : y_ticks) {
    const double y = py(v);
    out += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e5e5e5\"/>\n", left,
                       y, left + plot_w, y);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 8, y + 4,
                       v < 1 && v > 0 ? fmt::format("{:g}", v) : format_number(v));
  }
  // x ticks: one per measured level, or nice steps on a linear axis.
  std::vector<double> x_ticks = spec.x;
  if (!spec.log_x) {
    x_ticks.clear();
    const int n = static_cast<int>(std::lround(x_axis.max / x_axis.step));
    for (int i = 0; i <= n; ++i) x_ticks.push_back(i * x_axis.step);
  }
  for (double x : x_ticks) {
    const double xp = px(x);
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#333\"/>\n", xp,
                       top + plot_h, top + plot_h + 5);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", xp,
                       top + plot_h + 20, format_number(x));
  }
  // Axes and labels.
  out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>\n", left, top,
                     top + plot_h);
  out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#333\"/>\n", left,
                     top + plot_h, left + plot_w);
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + plot_w / 2,
                     height - 20, xml_escape(spec.x_label));
  out += fmt::format(
      "<text x=\"20\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 20 {0})\">{1}</text>\n",
      top + plot_h / 2, xml_escape(log_y ? spec.y_label + " (log scale)" : spec.y_label));
  // Lines, points and the legend.
  for (std::size_t s = 0; s < spec.series.size(); ++s) {
    const auto& series = spec.series[s];
    const char* color = palette[s % std::size(palette)];
    std::string path;
    bool pen_down = false;
    for (std::size_t i = 0; i < spec.x.size() && i < series.y.size(); ++i) {
      const double v = series.y[i];
      if (!std::isfinite(v)) {
        pen_down = false;  // a missing point breaks the line
        continue;
      }
      path += fmt::format("{}{:.1f},{:.1f} ", pen_down ? "L" : "M", px(spec.x[i]), py(v));
      pen_down = true;
      out += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"><title>{}: {}</title></circle>\n",
          px(spec.x[i]), py(v), spec.log_x ? "3.5" : "2", color, xml_escape(series.name), format_number(v));
    }
    if (!path.empty()) {
      out += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path, color);
    }
    const double ly = top + 10 + 22 * static_cast<double>(s);
    const double lx = left + plot_w + 20;
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/>\n",
                       lx, ly, lx + 24, ly, color);
    out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", lx + 30, ly + 4, xml_escape(series.name));
  }
  out += "</svg>\n";
  return out;
}

std::string render_metric_chart(const bench_report& report, const metric_info& metric) {
  chart_spec spec;
  spec.title = fmt::format("{} ({})", metric.title, metric.unit);
  spec.y_label = metric.unit;
  spec.x_label = "Concurrency (clients, log scale)";
  spec.note = metric.higher_is_better ? "higher is better" : "lower is better";
  for (unsigned c : report.concurrency) spec.x.push_back(c);
  for (const auto& t : report.targets) {
    chart_series s{t.name, {}};
    for (unsigned c : report.concurrency) {
      double v = no_value;
      for (const auto& r : report.runs) {
        if (r.target == t.name && r.concurrency == c) v = metric.get(r);
      }
      s.y.push_back(v);
    }
    spec.series.push_back(std::move(s));
  }
  return render_line_chart(spec);
}

std::vector<named_chart> workload_charts(const bench_report& report) {
  std::vector<named_chart> out;
  // One series per target over `levels`, the value of the result for (target, level), NaN where none.
  auto by_level = [&](const auto& results, const std::vector<unsigned>& levels, auto level_of, auto value_of,
                      std::string key, std::string title, std::string unit, std::string x_label,
                      bool higher_is_better) {
    if (results.empty()) return;
    chart_spec spec;
    spec.title = fmt::format("{} ({})", title, unit);
    spec.y_label = unit;
    spec.x_label = std::move(x_label);
    spec.note = higher_is_better ? "higher is better" : "lower is better";
    for (unsigned l : levels) spec.x.push_back(l);
    for (const auto& t : report.targets) {
      chart_series s{t.name, {}};
      for (unsigned l : levels) {
        double v = no_value;
        for (const auto& r : results) {
          if (r.target == t.name && level_of(r) == l) v = value_of(r);
        }
        s.y.push_back(v);
      }
      spec.series.push_back(std::move(s));
    }
    out.push_back({std::move(key), std::move(title), render_line_chart(spec)});
  };
  auto streams = [](const many_streams_result& r) { return r.streams; };
  by_level(
      report.many_streams, report.stream_levels, streams,
      [](const many_streams_result& r) { return r.ops_s; }, "many_streams_ops_s",
      fmt::format("Many streams: {} B appends", format_number(report.option("append_bytes"))), "appends/s",
      "Streams (log scale)", true);
  by_level(
      report.many_streams, report.stream_levels, streams,
      [](const many_streams_result& r) { return r.p99_ms; }, "many_streams_p99_ms",
      "Many streams: append latency p99", "ms", "Streams (log scale)", false);
  auto subs = [](const fanout_result& r) { return r.subscribers; };
  by_level(
      report.fanout, report.subscriber_levels, subs, [](const fanout_result& r) { return r.p99_ms; },
      "fanout_p99_ms", "SSE fan-out: delivery p99", "ms", "Subscribers on one stream (log scale)", false);
  by_level(
      report.fanout, report.subscriber_levels, subs, [](const fanout_result& r) { return r.max_ms; },
      "fanout_max_ms", "SSE fan-out: delivery max", "ms", "Subscribers on one stream (log scale)", false);

  // Soak: one line per target over time; the samples of different targets share the x values only
  // roughly, so each series is drawn over the union of the sample times.
  auto over_time = [&](std::string key, std::string title, std::string unit, double soak_sample::*field) {
    if (report.soak.empty()) return;
    chart_spec spec;
    spec.title = fmt::format("{} ({})", title, unit);
    spec.y_label = unit;
    spec.x_label = "Seconds into the soak";
    spec.note = "flat is good";
    spec.log_x = false;
    for (const auto& r : report.soak) {
      for (const auto& s : r.samples) {
        if (std::find(spec.x.begin(), spec.x.end(), s.t_s) == spec.x.end()) spec.x.push_back(s.t_s);
      }
    }
    std::sort(spec.x.begin(), spec.x.end());
    for (const auto& r : report.soak) {
      chart_series series{r.target, std::vector<double>(spec.x.size(), no_value)};
      for (const auto& s : r.samples) {
        const auto at = std::find(spec.x.begin(), spec.x.end(), s.t_s) - spec.x.begin();
        series.y[static_cast<std::size_t>(at)] = s.*field;
      }
      spec.series.push_back(std::move(series));
    }
    out.push_back({std::move(key), std::move(title), render_line_chart(spec)});
  };
  over_time("soak_rss_mib", "Soak: server resident memory", "MiB", &soak_sample::rss_mib);
  over_time("soak_fds", "Soak: server open descriptors", "descriptors", &soak_sample::fds);
  over_time("soak_append_p99_ms", "Soak: append latency p99 per interval", "ms", &soak_sample::append_p99_ms);
  return out;
}

}  // namespace weir::bench
