// many_streams_workload: the many-streams measurement. N streams are created, then M closed-loop
// writers (one keep-alive connection each) append `append_bytes` for a fixed time, writer w cycling over
// streams w, w+M, w+2M, ... so that every stream is written; then the streams are deleted.
// Figures: acknowledged appends per second and their latency (p50, p99). Every wrong status, timeout or
// transport failure is counted under "many.<kind>" (creation: "many_create.<kind>").
#pragma once

#include <string>

#include "bench/bench_options.h"
#include "bench/bench_report.h"
#include "bench/phase_driver.h"

namespace weir::bench {

struct many_streams_config {
  std::string label;          // progress prefix
  std::string stream_prefix;  // stream names are <prefix>-<i>
  unsigned streams = 100;
  unsigned writers = 64;
  std::size_t append_bytes = 256;
  double secs = 15;
  unsigned request_timeout_ms = 30'000;
};

many_streams_result run_many_streams(const target_spec& target, const many_streams_config& cfg,
                                     progress_line& progress);

}  // namespace weir::bench
