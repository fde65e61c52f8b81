// svg_chart_writer: one self-contained SVG line chart per metric: the metric against concurrency (log2
// axis, a tick per measured level), one line per target, with title, axis labels, units, ticks and a
// legend, so it reads without results.json.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_report.h"

namespace weir::bench {

struct chart_series {
  std::string name;
  std::vector<double> y;  // one per x; NaN: no point
};

struct chart_spec {
  std::string title;
  std::string y_label;
  std::string x_label;
  std::string note;  // small text under the title, e.g. "higher is better"
  std::vector<double> x;
  std::vector<chart_series> series;
  bool log_x = true;  // log2 x axis with a tick per x (levels); false: linear from 0 (time)
};

// A chart with the file name it is written under (without ".svg").
struct named_chart {
  std::string key;
  std::string title;
  std::string svg;
};
// The charts of the many-streams, fan-out and soak workloads that ran (none for a workload that did not).
std::vector<named_chart> workload_charts(const bench_report& report);

std::string render_line_chart(const chart_spec& spec);
std::string render_metric_chart(const bench_report& report, const metric_info& metric);

// Axis helper, public for tests: a "nice" axis maximum (1, 2, 2.5 or 5 times a power of ten, times
// the tick count) at or above `max`, and the tick step.
struct axis_scale {
  double max;
  double step;
};
axis_scale nice_axis(double max, int ticks = 5);

}  // namespace weir::bench
