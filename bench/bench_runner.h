// bench_runner: the whole `weir bench` run. For each concurrency level and each target, in that order
// (so that targets are measured side by side, under the same machine conditions): create the streams,
// then the five workloads (sequential append latency, bulk write throughput, catch-up reads, small
// events, SSE live tail), then delete the streams. Results are written after every (level, target), so
// an interrupted run still leaves what it measured.
#pragma once

#include <string>

#include "base/result.h"
#include "bench/bench_options.h"
#include "bench/bench_report.h"

namespace weir::bench {

result<bench_report> run_bench(const bench_options& opts);

}  // namespace weir::bench
