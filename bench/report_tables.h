// report_tables: the figures of a bench_report as plain tables (header, rows, a flag per row), so that
// results.md (Markdown) and report.html (HTML) show the same numbers from one place. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_report.h"

namespace weir::bench {

struct report_table {
  std::string title;
  std::string note;  // one line under the title ("higher is better", the units, ...)
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> flagged;  // per row: a saturated client, lost or duplicated events, errors
};

// "Who won where": one row per headline figure (each many-streams and fan-out level, soak drift), a
// column per target, then the best target and its margin over the next.
report_table summary_table(const bench_report& report);
// The seed workloads: one table per metric, a row per concurrency level, a column per target.
std::vector<report_table> seed_tables(const bench_report& report);
// many-streams, fan-out, the soak's drift and each soak's samples.
std::vector<report_table> workload_tables(const bench_report& report);
// Warnings a reader must see first: saturated generator phases, errors, lost or duplicated events.
std::vector<std::string> report_warnings(const bench_report& report);

std::string to_markdown(const report_table& table);

// "45%" or "45% (saturated)" for a client CPU share.
std::string cpu_cell(const phase_cpu& cpu, unsigned threads = 1);

}  // namespace weir::bench
