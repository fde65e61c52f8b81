// `weir bench`: the command line of the load generator. Parses and checks the options, runs every
// workload against every target (bench_runner) and writes the results (results_writer).
#include "bench/bench_command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_options.h"
#include "bench/bench_runner.h"
#include "bench/results_reader.h"
#include "bench/results_writer.h"

namespace weir::bench {
namespace {

struct raw_options {
  std::vector<std::string> targets;
  std::vector<std::string> read_bases;
  std::string concurrency = "4,8,16,32,64,128,256";
  std::string workloads = "seed";
  std::string streams = "100,500,2000";
  std::string subscribers = "50,200,500,1000";
  std::string sat_streams = "100,1000,10000";
  std::string sat_connections = "64,256,1024,4096";
  std::vector<std::string> server_pids;
  std::vector<std::string> info;
  bool render_only = false;
  bench_options opts;
};

// The command as run (from /proc/self/cmdline), quoted where a shell would need it, for the report.
std::string command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string out;
  std::size_t start = 0;
  bool first = true;
  while (start < all.size()) {
    auto end = all.find('\0', start);
    if (end == std::string::npos) end = all.size();
    std::string arg = all.substr(start, end - start);
    if (first) {
      arg = "weir";  // not the build path
      first = false;
    }
    if (arg.find_first_of(" \t'\"$&;|<>*?`") != std::string::npos) {
      std::string q = "'";
      for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      arg = q + "'";
    }
    out += (out.empty() ? "" : " ") + arg;
    start = end + 1;
  }
  return out;
}

// --render-only: redraw results.md and the charts from an earlier run's results.json.
int render_only(const std::string& dir) {
  std::ifstream f(dir + "/results.json", std::ios::binary);
  std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.good() && json.empty()) {
    std::fprintf(stderr, "weir bench: cannot read %s/results.json\n", dir.c_str());
    return 1;
  }
  auto report = parse_report(json);
  if (!report) {
    std::fprintf(stderr, "weir bench: %s\n", report.err().reason.c_str());
    return 1;
  }
  if (auto s = write_results(dir, *report); !s) {
    std::fprintf(stderr, "weir bench: %s\n", s.err().reason.c_str());
    return 1;
  }
  return 0;
}

int run(const raw_options& raw, const std::string& command) {
  if (raw.render_only) return render_only(raw.opts.out);
  bench_options o = raw.opts;
  o.command = command;
  o.targets.clear();
  for (const auto& t : raw.targets) {
    auto spec = parse_target(t);
    if (!spec) {
      std::fprintf(stderr, "weir bench: %s\n", spec.err().reason.c_str());
      return 2;
    }
    o.targets.push_back(std::move(*spec));
  }
  for (const auto& rb : raw.read_bases) {
    if (auto s = apply_read_bases(rb, o.targets); !s) {
      std::fprintf(stderr, "weir bench: %s\n", s.err().reason.c_str());
      return 2;
    }
  }
  auto levels = parse_concurrency(raw.concurrency);
  if (!levels) {
    std::fprintf(stderr, "weir bench: %s\n", levels.err().reason.c_str());
    return 2;
  }
  o.concurrency = *levels;
  auto& w = o.work;
  auto fail = [](const error& e) {
    std::fprintf(stderr, "weir bench: %s\n", e.reason.c_str());
    return 2;
  };
  auto workloads = parse_workloads(raw.workloads);
  if (!workloads) return fail(workloads.err());
  w.workloads = *workloads;
  auto streams = parse_levels(raw.streams, "--streams");
  if (!streams) return fail(streams.err());
  w.stream_levels = *streams;
  auto subscribers = parse_levels(raw.subscribers, "--subscribers", 50'000);
  if (!subscribers) return fail(subscribers.err());
  w.subscriber_levels = *subscribers;
  auto sat_streams = parse_levels(raw.sat_streams, "--sat-streams", 1'000'000);
  if (!sat_streams) return fail(sat_streams.err());
  w.sat_stream_levels = *sat_streams;
  auto sat_connections = parse_levels(raw.sat_connections, "--sat-connections", 60'000);
  if (!sat_connections) return fail(sat_connections.err());
  w.sat_connections = *sat_connections;
  for (const auto& spec : raw.server_pids) {
    auto pid = parse_server_pid(spec);
    if (!pid) return fail(pid.err());
    const bool known = std::any_of(o.targets.begin(), o.targets.end(),
                                   [&](const target_spec& t) { return t.name == pid->first; });
    if (!known) return fail(error{1, fmt::format("--server-pid {}: no --target named {}", spec, pid->first)});
    w.server_pids[pid->first] = pid->second;
  }
  for (const auto& spec : raw.info) {
    auto kv = parse_info(spec);
    if (!kv) return fail(kv.err());
    w.info.push_back(*kv);
  }
  if (auto s = validate(w); !s) return fail(s.err());
  if (auto s = validate(o); !s) {
    std::fprintf(stderr, "weir bench: %s\n", s.err().reason.c_str());
    return 2;
  }
  auto report = run_bench(o);
  if (!report) {
    std::fprintf(stderr, "weir bench: %s\n", report.err().reason.c_str());
    return 1;
  }
  std::uint64_t errors = 0;
  for (const auto& r : report->runs) errors += r.errors();
  for (const auto& r : report->many_streams) errors += r.errors();
  for (const auto& r : report->fanout) errors += r.errors();
  for (const auto& r : report->soak) errors += r.errors();
  for (const auto& r : report->saturation) errors += r.errors();
  std::fprintf(stderr, "weir bench: %zu runs, %llu errors; results in %s (report.html)\n",
               report->runs.size() + report->many_streams.size() + report->fanout.size() +
                   report->soak.size() + report->saturation.size(),
               static_cast<unsigned long long>(errors), o.out.c_str());
  return 0;
}

}  // namespace

void register_command(CLI::App& app) {
  auto raw = std::make_shared<raw_options>();
  auto* cmd =
      app.add_subcommand("bench", "Measure Durable Streams servers side by side (docs/benchmarks.md)");
  auto& o = raw->opts;
  // A later value wins, so that `bench/compare -- --throughput-secs 5` overrides the script's choice.
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--target", raw->targets,
                  "NAME=URL of a Durable Streams server (repeatable); "
                  "streams go under the URL's path, or /v1/stream (at least one unless --render-only); "
                  "NAME=URL,URL,... for the nodes of one cluster: connections go round robin over them")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--read-bases", raw->read_bases,
                  "NAME=URL,URL,... spread that target's reads over replicas")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--concurrency", raw->concurrency, "Concurrency levels, comma-separated")
      ->capture_default_str();
  cmd->add_option("--payload-bytes", o.payload_bytes, "Bulk append size")->capture_default_str();
  cmd->add_option("--small-payload-bytes", o.small_payload_bytes, "Small event size")->capture_default_str();
  cmd->add_option("--read-payload-bytes", o.read_payload_bytes, "Catch-up read record size")
      ->capture_default_str();
  cmd->add_option("--sse-payload-bytes", o.sse_payload_bytes, "SSE event size")->capture_default_str();
  cmd->add_option("--latency-count", o.latency_count, "Sequential appends timed for p50/p99")
      ->capture_default_str();
  cmd->add_option("--throughput-secs", o.throughput_secs, "Length of each throughput phase")
      ->capture_default_str();
  cmd->add_option("--sse-count", o.sse_count, "Events appended per SSE stream")->capture_default_str();
  cmd->add_option("--sse-readers", o.sse_readers, "SSE subscriptions per stream")->capture_default_str();
  cmd->add_option("--sse-interval-ms", o.sse_interval_ms, "Pacing of each SSE stream's appends")
      ->capture_default_str();
  cmd->add_option("--request-timeout-ms", o.request_timeout_ms, "A request unanswered this long is an error")
      ->capture_default_str();
  cmd->add_option("--sse-timeout-ms", o.sse_timeout_ms,
                  "Wait for undelivered SSE events after the last append")
      ->capture_default_str();
  cmd->add_option("--settle-secs", o.settle_secs,
                  "Before each target's step, wait up to this long until every --server-pid process is "
                  "idle (a server still working off its own backlog would take CPU from the next "
                  "target); 0: do not wait")
      ->capture_default_str();
  cmd->add_option("--workloads", raw->workloads,
                  "Workloads to run, comma-separated: seed, many-streams, fanout, soak (or all: those "
                  "four), saturation")
      ->capture_default_str();
  auto& w = o.work;
  cmd->add_option("--streams", raw->streams, "many-streams: stream counts, comma-separated")
      ->capture_default_str();
  cmd->add_option("--writers", w.writers, "many-streams: closed-loop writers")->capture_default_str();
  cmd->add_option("--append-bytes", w.append_bytes, "many-streams, fanout and soak: append size")
      ->capture_default_str();
  cmd->add_option("--many-secs", w.many_secs, "many-streams: length of each level")->capture_default_str();
  cmd->add_option("--subscribers", raw->subscribers, "fanout: SSE subscriber counts, comma-separated")
      ->capture_default_str();
  cmd->add_option("--fanout-rate", w.fanout_rate, "fanout: appends per second of the one writer")
      ->capture_default_str();
  cmd->add_option("--fanout-events", w.fanout_events, "fanout: appends per level")->capture_default_str();
  cmd->add_option("--soak-secs", w.soak_secs, "soak: length per target")->capture_default_str();
  cmd->add_option("--soak-sample-secs", w.soak_sample_secs, "soak: sampling interval")->capture_default_str();
  cmd->add_option("--soak-streams", w.soak_streams, "soak: streams at a time")->capture_default_str();
  cmd->add_option("--soak-rate", w.soak_rate, "soak: appends per second, all streams together")
      ->capture_default_str();
  cmd->add_option("--soak-stream-appends", w.soak_stream_appends,
                  "soak: appends before a stream is deleted and replaced")
      ->capture_default_str();
  cmd->add_option("--soak-readers", w.soak_readers, "soak: closed-loop catch-up readers")
      ->capture_default_str();
  cmd->add_option("--sat-streams", raw->sat_streams,
                  "saturation: stream counts, comma-separated (one producer per stream)")
      ->capture_default_str();
  cmd->add_option("--sat-connections", raw->sat_connections,
                  "saturation: the connection ladder, comma-separated (capped at the stream count)")
      ->capture_default_str();
  cmd->add_option("--sat-secs", w.sat_secs, "saturation: measured seconds per step")->capture_default_str();
  cmd->add_option("--sat-warmup-secs", w.sat_warmup_secs, "saturation: unmeasured seconds before each step")
      ->capture_default_str();
  cmd->add_option("--sat-plateau", w.sat_plateau,
                  "saturation: stop climbing once a step adds no more than this share (0.05: 5%)")
      ->capture_default_str();
  cmd->add_option(
         "--server-pid", raw->server_pids,
         "NAME=PID of a target's server on this machine, for its RSS, descriptors and CPU (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--info", raw->info, "KEY=VALUE shown in the report, e.g. versions (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_flag("--render-only", raw->render_only,
                "Only redraw results.md, report.html and the charts from --out/results.json");
  cmd->add_option("--out", o.out, "Directory for results.json, results.md, report.html and the charts")
      ->capture_default_str();
  cmd->callback([raw] { std::exit(run(*raw, command_line())); });
}

}  // namespace weir::bench
