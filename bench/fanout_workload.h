// fanout_workload: SSE fan-out (docs/benchmarks.md, "Many streams, SSE fan-out and soak"). One stream,
// N SSE subscribers (PROTOCOL.md 5.8), one writer appending `events` tagged events at a fixed rate.
// Latency runs from the append's send to each subscriber's receipt, on this process's one monotonic
// clock; every (subscriber, event) pair must arrive exactly once: lost and duplicated deliveries are
// counted (delivery_tracker) and are errors. The SSE machinery is sse_workload's with one stream; error
// kinds are "fanout.<kind>".
#pragma once

#include <string>

#include "bench/bench_options.h"
#include "bench/bench_report.h"
#include "bench/phase_driver.h"

namespace weir::bench {

struct fanout_config {
  std::string label;
  std::string stream;  // the stream's name
  unsigned subscribers = 50;
  double rate_per_s = 20;
  unsigned events = 200;
  std::size_t payload_bytes = 256;  // at least 32 (the event tag)
  unsigned request_timeout_ms = 30'000;
  unsigned delivery_timeout_ms = 10'000;
};

fanout_result run_fanout(const target_spec& target, const fanout_config& cfg, progress_line& progress);

}  // namespace weir::bench
