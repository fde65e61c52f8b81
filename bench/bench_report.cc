#include "bench/bench_report.h"

namespace weir::bench {

const std::vector<metric_info>& metrics() {
  static const std::vector<metric_info> all = {
      {"append_p50_ms", "Sequential append latency p50", "ms", false, "append",
       [](const run_result& r) { return r.append_p50_ms; }},
      {"append_p99_ms", "Sequential append latency p99", "ms", false, "append",
       [](const run_result& r) { return r.append_p99_ms; }},
      {"write_mib_s", "Bulk write throughput", "MiB/s", true, "write",
       [](const run_result& r) { return r.write_mib_s; }},
      {"read_mib_s", "Catch-up read throughput", "MiB/s", true, "read",
       [](const run_result& r) { return r.read_mib_s; }},
      {"read_p99_ms", "Catch-up read latency p99", "ms", false, "read",
       [](const run_result& r) { return r.read_p99_ms; }},
      {"small_req_s", "Small event appends", "req/s", true, "small",
       [](const run_result& r) { return r.small_req_s; }},
      {"sse_p50_ms", "SSE append-to-delivery p50", "ms", false, "sse",
       [](const run_result& r) { return r.sse_p50_ms; }},
      {"sse_p99_ms", "SSE append-to-delivery p99", "ms", false, "sse",
       [](const run_result& r) { return r.sse_p99_ms; }},
      {"errors", "Errors", "count", false, nullptr,
       [](const run_result& r) { return static_cast<double>(r.errors()); }},
  };
  return all;
}

}  // namespace weir::bench
