// results_writer: turns a bench_report into results.json (schema: docs/benchmarks.md, "weir bench"),
// results.md (the comparison tables), report.html (html_report_writer) and, with svg_chart_writer, one
// SVG per metric and per workload chart.
#pragma once

#include <string>

#include "base/result.h"
#include "bench/bench_report.h"

namespace weir::bench {

std::string to_json(const bench_report& report);
std::string to_markdown(const bench_report& report);
// The "By metric" tables of results.md: one per metric, a row per concurrency level, a column per target.
std::string metric_tables(const bench_report& report);

// Writes results.json, results.md, report.html and the <chart>.svg files into `dir` (created if missing).
status write_results(const std::string& dir, const bench_report& report);

// A number for humans: 3 significant digits for small values, no exponent, "n/a" for NaN.
std::string format_number(double v);

}  // namespace weir::bench
