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
  int server_pid = 0;              // 0: not known (no /proc figures); a cluster's first node
  double server_cpu_s = no_value;  // the server's user+system seconds over the whole invocation
  std::vector<int> server_pids;    // every process of the server (a cluster's nodes), summed
};

// A generator thread above this share of a core is the bottleneck, not the server: the report flags it.
inline constexpr double saturated_share = 0.9;

// What every workload result carries besides its figures.
struct workload_tally {
  std::map<std::string, std::uint64_t> error_kinds;  // "many.status_404", "fanout.lost", ...
  std::map<std::string, std::uint64_t> counts;
  phase_cpu cpu;         // the client over the measured phase
  unsigned threads = 1;  // generator threads in that phase
  std::uint64_t errors() const {
    std::uint64_t n = 0;
    for (const auto& [kind, count] : error_kinds) n += count;
    return n;
  }
  bool saturated() const {
    return std::isfinite(cpu.share()) && cpu.share() > saturated_share * static_cast<double>(threads);
  }
};

// many-streams: `writers` closed-loop writers append `append_bytes` round-robin over `streams` streams.
struct many_streams_result : workload_tally {
  std::string target;
  unsigned streams = 0;
  unsigned writers = 0;
  double ops_s = no_value;
  double p50_ms = no_value;
  double p99_ms = no_value;
};

// fanout: one writer at a fixed rate, `subscribers` SSE readers of one stream; latency from the
// append's send to each subscriber's receipt.
struct fanout_result : workload_tally {
  std::string target;
  unsigned subscribers = 0;
  double rate_per_s = 0;
  double p50_ms = no_value;
  double p99_ms = no_value;
  double max_ms = no_value;
  std::uint64_t expected = 0;   // subscribers x events
  std::uint64_t delivered = 0;  // distinct (subscriber, event) pairs received
  std::uint64_t lost = 0;       // expected - delivered
  std::uint64_t duplicated = 0;
};

// One soak sample: the server as /proc shows it and the latencies of the interval that ended at t_s.
struct soak_sample {
  double t_s = 0;
  double rss_mib = no_value;
  double fds = no_value;
  double append_p99_ms = no_value;
  double read_p99_ms = no_value;
  double ops_s = no_value;         // appends + reads + long-poll answers per second in the interval
  double client_share = no_value;  // the generator's CPU over the interval
};

struct soak_result : workload_tally {
  std::string target;
  double duration_s = 0;
  std::vector<soak_sample> samples;
};

// Where a soak ended against where it was after its first minute (or half the run when shorter than
// two minutes): the soak's target is to stay within 10%.
struct soak_drift {
  double base_t_s = no_value;
  double base_rss_mib = no_value, end_rss_mib = no_value;
  double base_fds = no_value, end_fds = no_value;
  double rss_change() const { return base_rss_mib > 0 ? end_rss_mib / base_rss_mib - 1 : no_value; }
  double fds_change() const { return base_fds > 0 ? end_fds / base_fds - 1 : no_value; }
};
soak_drift drift_of(const soak_result& r);

// saturation: one step of the connection ladder (saturation_workload.h), figures over its measured window.
struct saturation_level {
  unsigned connections = 0;
  double ops_s = no_value;  // acknowledged appends per second
  double p50_ms = no_value;
  double p99_ms = no_value;
  double p999_ms = no_value;
  std::uint64_t ok = 0;
  std::uint64_t errors = 0;
  phase_cpu client;                        // the generator over the window
  double server_cpu_s = no_value;          // the server's user+system seconds over the window
  double server_rss_mib = no_value;        // at the window's end
  double server_cgroup_ws_mib = no_value;  // the server's own cgroup's working set, when it has one
  double client_lag_p99_ms = no_value;     // the generator's own event-loop lag (io::event_loop::lag_us)
  double server_us_per_op() const { return ok ? server_cpu_s * 1e6 / static_cast<double>(ok) : no_value; }
  double client_us_per_op() const { return ok ? client.cpu_s * 1e6 / static_cast<double>(ok) : no_value; }
};

// saturation: N streams, one idempotent producer per stream, 256 B appends over a ladder of connection
// counts until throughput stops climbing; the ceiling is the best step. Errors by status in error_kinds.
struct saturation_result : workload_tally {
  std::string target;
  std::string protocol;  // "http" (Durable Streams, Producer-Id/Epoch/Seq) or "redis" (XADD)
  unsigned streams = 0;
  std::vector<saturation_level> levels;
  std::size_t ceiling = 0;            // index into levels of the highest ops_s
  double rss_before_mib = no_value;   // the server before the streams were created
  double rss_streams_mib = no_value;  // after they were created, before any append
  double create_s = no_value;         // how long creating them took
  const saturation_level* top() const { return levels.empty() ? nullptr : &levels[ceiling]; }
  // (RSS after creating the streams - before) / streams, in KiB: what an empty stream costs.
  double kib_per_stream() const {
    return streams ? (rss_streams_mib - rss_before_mib) * 1024 / static_cast<double>(streams) : no_value;
  }
};

// A seed run whose client was saturated in any phase.
inline bool seed_saturated(const run_result& r) {
  for (const auto& [phase, cpu] : r.client_cpu) {
    if (std::isfinite(cpu.share()) && cpu.share() > saturated_share) return true;
  }
  return false;
}

struct bench_report {
  std::string tool_version;
  std::string started_at;  // RFC 3339 UTC
  std::string finished_at;
  std::string command;  // the command line, as run
  std::map<std::string, std::string> machine;
  std::map<std::string, double> options;  // numeric options (payload sizes, phase lengths, ...)
  // An option's value, or no_value when the run did not record it.
  double option(const std::string& name) const {
    auto it = options.find(name);
    return it == options.end() ? no_value : it->second;
  }
  std::vector<unsigned> concurrency;
  std::vector<target_info> targets;
  std::vector<run_result> runs;  // the seed workloads

  std::vector<std::string> workloads;                     // as run, e.g. {"seed", "many-streams"}
  std::vector<std::pair<std::string, std::string>> info;  // versions and other facts for the report
  std::vector<unsigned> stream_levels;                    // many-streams
  std::vector<unsigned> subscriber_levels;                // fanout
  std::vector<many_streams_result> many_streams;
  std::vector<fanout_result> fanout;
  std::vector<soak_result> soak;
  std::vector<unsigned> saturation_streams;  // saturation: the stream counts
  std::vector<saturation_result> saturation;
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
