#include "bench/bench_report.h"

#include <algorithm>

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

namespace weir::bench {

soak_drift drift_of(const soak_result& r) {
  soak_drift d;
  if (r.samples.empty()) return d;
  // The first minute settles caches and pools; a run shorter than two minutes uses its first half.
  const double base_t = std::min(60.0, r.duration_s / 2);
  const soak_sample* base = nullptr;
  for (const auto& s : r.samples) {
    if (s.t_s + 1e-6 >= base_t) {
      base = &s;
      break;
    }
  }
  if (!base) base = &r.samples.back();
  const auto& end = r.samples.back();
  d.base_t_s = base->t_s;
  d.base_rss_mib = base->rss_mib;
  d.base_fds = base->fds;
  d.end_rss_mib = end.rss_mib;
  d.end_fds = end.fds;
  return d;
}

}  // namespace weir::bench
