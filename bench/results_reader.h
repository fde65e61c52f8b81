// results_reader: reads a results.json written by results_writer back into a bench_report, so that
// `weir bench --render-only --out DIR` can redraw results.md and the charts of an earlier run.
#pragma once

#include <string_view>

#include "base/result.h"
#include "bench/bench_report.h"

namespace weir::bench {

result<bench_report> parse_report(std::string_view json);

}  // namespace weir::bench
