// bench_report: what one `weir bench` invocation measured, as plain data. The workloads fill it in;
// results_writer and svg_chart_writer turn it into results.json, results.md and the charts.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace weir::bench {

inline constexpr double no_value = std::numeric_limits<double>::quiet_NaN();

// The client's own CPU use during one phase: user+system seconds over wall seconds (1.0 = one core).
struct phase_cpu {
  double wall_s = 0;
  double cpu_s = 0;
  double share() const { return wall_s > 0 ? cpu_s / wall_s : no_value; }
};

// One target at one concurrency level. Latencies in milliseconds; NaN when the phase did not run.
struct run_result {
  std::string target;
  unsigned concurrency = 0;

  double append_p50_ms = no_value;
  double append_p99_ms = no_value;
  double read_p99_ms = no_value;
  double write_mib_s = no_value;
  double read_mib_s = no_value;
  double small_req_s = no_value;
  double sse_p50_ms = no_value;
  double sse_p99_ms = no_value;

  // Every failed request, wrong status, short read or missing event, by kind ("write.status", ...).
  std::map<std::string, std::uint64_t> error_kinds;
  std::uint64_t errors() const {
    std::uint64_t n = 0;
    for (const auto& [kind, count] : error_kinds) n += count;
    return n;
  }
  // Work done, for the reader who wants to check a figure (requests, bytes, events).
  std::map<std::string, std::uint64_t> counts;
  // Client CPU per phase: "append", "write", "read", "small", "sse".
  std::map<std::string, phase_cpu> client_cpu;
};

struct target_info {
  std::string name;
  std::string url;
  std::vector<std::string> read_bases;
};

struct bench_report {
  std::string tool_version;
  std::string started_at;  // RFC 3339 UTC
  std::string finished_at;
  std::string command;  // the command line, as run
  std::map<std::string, std::string> machine;
  std::map<std::string, double> options;  // numeric options (payload sizes, phase lengths, ...)
  std::vector<unsigned> concurrency;
  std::vector<target_info> targets;
  std::vector<run_result> runs;
};

// The charted metrics, in report order.
struct metric_info {
  const char* key;    // results.json field
  const char* title;  // chart title and table row
  const char* unit;
  bool higher_is_better;
  const char* cpu_phase;  // the client_cpu phase shown beside it
  double (*get)(const run_result&);
};

const std::vector<metric_info>& metrics();

}  // namespace weir::bench
