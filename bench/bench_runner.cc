#include "bench/bench_runner.h"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <ctime>
#include <fstream>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "bench/fanout_workload.h"
#include "bench/many_streams_workload.h"
#include "bench/phase_driver.h"
#include "bench/proc_sampler.h"
#include "bench/request_loop.h"
#include "bench/results_writer.h"
#include "bench/saturation_workload.h"
#include "bench/soak_workload.h"
#include "bench/sse_workload.h"

namespace weir::bench {
namespace {

constexpr double mib = 1024.0 * 1024.0;
constexpr const char* binary_type = "application/octet-stream";
// SSE payloads travel as text: PROTOCOL.md 5.8 sends text/* data events without base64.
constexpr const char* sse_type = "text/plain";

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::map<std::string, std::string> machine_info() {
  std::map<std::string, std::string> m;
  m["cpus"] = std::to_string(std::thread::hardware_concurrency());
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      m["cpu_model"] = line.substr(line.find(':') + 2);
      break;
    }
  }
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemTotal:", 0) == 0) {
      long kb = std::atol(line.c_str() + 9);
      m["memory"] = fmt::format("{:.1f} GiB", static_cast<double>(kb) / (1024.0 * 1024.0));
      break;
    }
  }
  utsname u{};
  if (::uname(&u) == 0) m["kernel"] = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  return m;
}

// Offsets are opaque (PROTOCOL.md 8): percent-encode anything outside RFC 3986 unreserved.
std::string url_encode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// "status_503": the kind of a wrong status names it, so the report says what the server answered; a 503
// also carries the start of its text ("status_503 the write may or may not have been applied"): weir
// answers 503 for several reasons (no quorum, outcome unknown, back-pressure).
std::string status_kind(const http_response& resp) {
  if (resp.status != 503 || resp.body.empty()) return fmt::format("status_{}", resp.status);
  std::string why = resp.body.substr(0, std::min<std::size_t>(resp.body.find_first_of("(;\n"), 48));
  while (!why.empty() && why.back() == ' ') why.pop_back();
  return fmt::format("status_503 {}", why);
}

bool success_2xx(int status) {
  return status >= 200 && status < 300;
}

// One target at one concurrency level.
class level_run {
 public:
  level_run(const bench_options& o, const target_spec& t, std::size_t target_index, unsigned c,
            const std::string& run_id, progress_line& progress)
      : o_(o), t_(t), c_(c), progress_(progress) {
    r_.target = t.name;
    r_.concurrency = c;
    label_ = fmt::format("[{} c={}]", t.name, c);
    const auto base = fmt::format("bench-{}-t{}-c{}", run_id, target_index, c);
    latency_stream_ = base + "-latency";
    for (unsigned i = 0; i < c; ++i) {
      write_streams_.push_back(fmt::format("{}-write-{}", base, i));
      small_streams_.push_back(fmt::format("{}-small-{}", base, i));
      read_streams_.push_back(fmt::format("{}-read-{}", base, i));
      sse_streams_.push_back({fmt::format("{}-sse-{}", base, i), "-1"});
    }
  }

  run_result run() {
    if (create_streams()) {
      append_latency();
      write_throughput();
      catch_up_reads();
      small_events();
      sse_tail();
    }
    delete_streams();
    return std::move(r_);
  }

 private:
  loop_config config(std::string phase) {
    loop_config cfg;
    cfg.phase = std::move(phase);
    cfg.label = label_;
    cfg.request_timeout_ms = o_.request_timeout_ms;
    return cfg;
  }

  void done(const std::string& text, const loop_outcome& out) {
    progress_.done(fmt::format("{} {} (client cpu {:.0f}%, {} errors)", label_, text, 100 * out.cpu.share(),
                               out.errors));
  }

  // Worker i's connection goes to base i of the target (round robin over a cluster's nodes), and so do
  // all the requests it sends.
  const endpoint& base(std::size_t worker) const { return t_.base(worker); }

  std::string post_head(std::size_t worker, const std::string& stream, std::size_t size,
                        const char* type = binary_type) {
    return format_request_head("POST", base(worker), stream, "", type, size, true);
  }

  // PUT every stream; false when none could be created (nothing else can run).
  bool create_streams() {
    struct item {
      std::string name;
      const char* type;
      std::size_t sse = SIZE_MAX;
    };
    std::vector<std::vector<item>> per_worker(c_);
    for (unsigned i = 0; i < c_; ++i) {
      per_worker[i] = {{write_streams_[i], binary_type},
                       {small_streams_[i], binary_type},
                       {read_streams_[i], binary_type},
                       {sse_streams_[i].name, sse_type, i}};
    }
    per_worker[0].push_back({latency_stream_, binary_type});
    std::vector<loop_worker> workers(c_);
    for (unsigned i = 0; i < c_; ++i) {
      workers[i].ep = base(i);
      for (const auto& it : per_worker[i]) {
        workers[i].heads.push_back(format_request_head("PUT", base(i), it.name, "", it.type, 0, true));
      }
    }
    std::vector<std::size_t> answered(c_, 0);
    auto cfg = config("create");
    cfg.check = [&](const http_response& resp, std::size_t w, std::uint64_t n) -> std::string {
      ++answered[w];
      if (resp.status != 201 && resp.status != 200) return status_kind(resp);
      const auto& it = per_worker[w][n % per_worker[w].size()];
      if (it.sse != SIZE_MAX && !resp.next_offset.empty())
        sse_streams_[it.sse].start_offset = resp.next_offset;
      ++created_;
      return "";
    };
    cfg.worker_done = [&](std::size_t w) { return answered[w] >= per_worker[w].size(); };
    cfg.max_requests_per_worker = per_worker[0].size();
    auto out = run_request_loop(workers, cfg, r_, progress_);
    done(fmt::format("created {} streams", created_), out);
    return created_ > 0;
  }

  void append_latency() {
    const std::string body(o_.payload_bytes, 'a');
    std::vector<loop_worker> workers(1);
    workers[0] = {base(0), {post_head(0, latency_stream_, body.size())}, body, true};
    auto cfg = config("append");
    cfg.max_requests_per_worker = o_.latency_count;
    cfg.check = [](const http_response& resp, std::size_t, std::uint64_t) -> std::string {
      return success_2xx(resp.status) ? "" : status_kind(resp);
    };
    auto out = run_request_loop(workers, cfg, r_, progress_);
    if (out.latency.count() > 0) {
      r_.append_p50_ms = out.latency.percentile_ms(50);
      r_.append_p99_ms = out.latency.percentile_ms(99);
    }
    r_.counts["append_requests"] = out.ok;
    r_.client_cpu["append"] = out.cpu;
    done(fmt::format("append latency p50 {} ms, p99 {} ms over {} appends", format_number(r_.append_p50_ms),
                     format_number(r_.append_p99_ms), out.ok),
         out);
  }

  void write_throughput() {
    const std::string body(o_.payload_bytes, 'w');
    std::vector<loop_worker> workers(c_);
    for (unsigned i = 0; i < c_; ++i)
      workers[i] = {base(i), {post_head(i, write_streams_[i], body.size())}, body, true};
    auto cfg = config("write");
    cfg.duration_s = o_.throughput_secs;
    cfg.check = [](const http_response& resp, std::size_t, std::uint64_t) -> std::string {
      return success_2xx(resp.status) ? "" : status_kind(resp);
    };
    auto out = run_request_loop(workers, cfg, r_, progress_);
    r_.write_mib_s = static_cast<double>(out.sent_bytes) / mib / out.elapsed_s;
    r_.counts["write_requests"] = out.ok;
    r_.counts["write_bytes"] = out.sent_bytes;
    r_.client_cpu["write"] = out.cpu;
    done(fmt::format("write {} MiB/s", format_number(r_.write_mib_s)), out);
  }

  void catch_up_reads() {
    // 1. One record of read_payload_bytes per reader's stream.
    const std::string body(o_.read_payload_bytes, 'r');
    std::vector<loop_worker> writers(c_);
    for (unsigned i = 0; i < c_; ++i)
      writers[i] = {base(i), {post_head(i, read_streams_[i], body.size())}, body, true};
    auto prep = config("read_prepare");
    prep.max_requests_per_worker = 1;
    prep.check = [](const http_response& resp, std::size_t, std::uint64_t) -> std::string {
      return success_2xx(resp.status) ? "" : status_kind(resp);
    };
    run_request_loop(writers, prep, r_, progress_);

    // 2. Wait until each record is visible where it will be read (a replica may lag the leader).
    std::vector<loop_worker> readers(c_);
    std::vector<const endpoint*> reader_ep(c_);
    for (unsigned i = 0; i < c_; ++i) {
      reader_ep[i] = &t_.read_base(i);
      readers[i] = {*reader_ep[i],
                    {format_request_head("GET", *reader_ep[i], read_streams_[i], "offset=-1", "", 0, false)},
                    {},
                    false};
    }
    // A server may answer a catch-up read in chunks (PROTOCOL.md 5.6: "up to a server-defined maximum
    // chunk size"): one record read follows Stream-Next-Offset until it has the whole record.
    std::vector<unsigned> reader_of;  // worker -> reader index, for the loop being run
    auto follow = [&](const http_response& last, std::uint64_t so_far, std::size_t w, std::string& next) {
      if (last.status != 200 || last.body_bytes == 0 || so_far >= o_.read_payload_bytes ||
          last.next_offset.empty()) {
        return false;
      }
      const unsigned i = reader_of[w];
      next = format_request_head("GET", *reader_ep[i], read_streams_[i],
                                 "offset=" + url_encode(last.next_offset), "", 0, false);
      return true;
    };
    for (unsigned i = 0; i < c_; ++i) reader_of.push_back(i);
    std::vector<bool> visible(c_, false);
    auto wait = config("read_visible");
    wait.duration_s = static_cast<double>(o_.request_timeout_ms) / 1000.0;
    wait.retry_delay_ms = 10;
    wait.follow = follow;
    wait.check = [&](const http_response& resp, std::size_t w, std::uint64_t) -> std::string {
      if (resp.status == 200 && resp.body_bytes == o_.read_payload_bytes) visible[w] = true;
      return "";  // not visible yet is not an error (until the wait ends)
    };
    wait.worker_done = [&](std::size_t w) { return static_cast<bool>(visible[w]); };
    run_request_loop(readers, wait, r_, progress_);
    std::vector<loop_worker> ready;
    reader_of.clear();
    for (unsigned i = 0; i < c_; ++i) {
      if (visible[i]) {
        ready.push_back(readers[i]);
        reader_of.push_back(i);
      } else {
        ++r_.error_kinds["read.not_visible"];
      }
    }

    // 3. Read them again and again: each whole record must arrive with status 200 and its exact length.
    auto cfg = config("read");
    cfg.duration_s = o_.throughput_secs;
    cfg.follow = follow;
    cfg.check = [&](const http_response& resp, std::size_t, std::uint64_t) -> std::string {
      if (resp.status != 200) return status_kind(resp);
      if (resp.body_bytes < o_.read_payload_bytes) return "short";
      if (resp.body_bytes > o_.read_payload_bytes) return "long";
      return "";
    };
    auto out = run_request_loop(ready, cfg, r_, progress_);
    r_.read_mib_s = static_cast<double>(out.received_bytes) / mib / out.elapsed_s;
    if (out.latency.count() > 0) r_.read_p99_ms = out.latency.percentile_ms(99);
    r_.counts["read_records"] = out.ok;
    r_.counts["read_http_requests"] = out.ok + out.follow_requests;
    r_.counts["read_bytes"] = out.received_bytes;
    r_.client_cpu["read"] = out.cpu;
    done(fmt::format(
             "read {} MiB/s, p99 {} ms, {} requests per record", format_number(r_.read_mib_s),
             format_number(r_.read_p99_ms),
             out.ok ? format_number(static_cast<double>(out.ok + out.follow_requests) / out.ok) : "n/a"),
         out);
  }

  void small_events() {
    const std::string body(o_.small_payload_bytes, 's');
    std::vector<loop_worker> workers(c_);
    for (unsigned i = 0; i < c_; ++i)
      workers[i] = {base(i), {post_head(i, small_streams_[i], body.size())}, body, true};
    auto cfg = config("small");
    cfg.duration_s = o_.throughput_secs;
    cfg.check = [](const http_response& resp, std::size_t, std::uint64_t) -> std::string {
      return success_2xx(resp.status) ? "" : status_kind(resp);
    };
    auto out = run_request_loop(workers, cfg, r_, progress_);
    r_.small_req_s = static_cast<double>(out.ok) / out.elapsed_s;
    r_.counts["small_requests"] = out.ok;
    r_.client_cpu["small"] = out.cpu;
    done(fmt::format("small events {} req/s", format_number(r_.small_req_s)), out);
  }

  void sse_tail() {
    sse_config cfg;
    cfg.label = label_;
    cfg.payload_bytes = o_.sse_payload_bytes;
    cfg.event_count = o_.sse_count;
    cfg.readers_per_stream = o_.sse_readers;
    cfg.interval_ms = o_.sse_interval_ms;
    cfg.request_timeout_ms = o_.request_timeout_ms;
    cfg.delivery_timeout_ms = o_.sse_timeout_ms;
    const auto errors_before = r_.errors();
    auto out = run_sse_workload(t_, sse_streams_, cfg, r_, progress_);
    if (out.latency.count() > 0) {
      r_.sse_p50_ms = out.latency.percentile_ms(50);
      r_.sse_p99_ms = out.latency.percentile_ms(99);
    }
    r_.counts["sse_events_expected"] = out.expected;
    r_.counts["sse_events_delivered"] = out.delivered;
    r_.client_cpu["sse"] = out.cpu;
    progress_.done(fmt::format("{} sse p50 {} ms, p99 {} ms, {}/{} delivered (client cpu {:.0f}%, {} errors)",
                               label_, format_number(r_.sse_p50_ms), format_number(r_.sse_p99_ms),
                               out.delivered, out.expected, 100 * out.cpu.share(),
                               r_.errors() - errors_before));
  }

  void delete_streams() {
    std::vector<loop_worker> workers(c_);
    for (unsigned i = 0; i < c_; ++i) {
      workers[i].ep = base(i);
      for (const auto* name :
           {&write_streams_[i], &small_streams_[i], &read_streams_[i], &sse_streams_[i].name}) {
        workers[i].heads.push_back(format_request_head("DELETE", base(i), *name, "", "", 0, false));
      }
    }
    workers[0].heads.push_back(format_request_head("DELETE", base(0), latency_stream_, "", "", 0, false));
    std::vector<std::size_t> answered(c_, 0);
    auto cfg = config("delete");
    cfg.max_requests_per_worker = workers[0].heads.size();
    cfg.check = [&](const http_response& resp, std::size_t w, std::uint64_t) -> std::string {
      ++answered[w];
      return success_2xx(resp.status) ? "" : status_kind(resp);
    };
    cfg.worker_done = [&](std::size_t w) { return answered[w] >= workers[w].heads.size(); };
    run_request_loop(workers, cfg, r_, progress_);
  }

  const bench_options& o_;
  const target_spec& t_;
  unsigned c_;
  progress_line& progress_;
  run_result r_;
  std::string label_;
  std::string latency_stream_;
  std::vector<std::string> write_streams_, small_streams_, read_streams_;
  std::vector<sse_stream> sse_streams_;
  std::size_t created_ = 0;
};

}  // namespace

result<bench_report> run_bench(const bench_options& opts) {
  // SSE at high concurrency holds (readers + 1) connections per stream: use every descriptor allowed.
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  bench_report report;
  report.tool_version = "weir bench";
  report.started_at = utc_now();
  report.command = opts.command;
  report.machine = machine_info();
  report.options = {{"payload_bytes", static_cast<double>(opts.payload_bytes)},
                    {"small_payload_bytes", static_cast<double>(opts.small_payload_bytes)},
                    {"read_payload_bytes", static_cast<double>(opts.read_payload_bytes)},
                    {"sse_payload_bytes", static_cast<double>(opts.sse_payload_bytes)},
                    {"latency_count", static_cast<double>(opts.latency_count)},
                    {"throughput_secs", opts.throughput_secs},
                    {"sse_count", static_cast<double>(opts.sse_count)},
                    {"sse_readers", static_cast<double>(opts.sse_readers)},
                    {"sse_interval_ms", static_cast<double>(opts.sse_interval_ms)},
                    {"request_timeout_ms", static_cast<double>(opts.request_timeout_ms)},
                    {"sse_timeout_ms", static_cast<double>(opts.sse_timeout_ms)},
                    {"settle_secs", opts.settle_secs}};
  report.concurrency = opts.concurrency;
  for (const auto& t : opts.targets) {
    target_info info{t.name, t.urls(), {}};
    for (const auto& rb : t.read_bases) info.read_bases.push_back(rb.url);
    report.targets.push_back(std::move(info));
  }
  const auto run_id = fmt::format("{:x}{:x}", static_cast<unsigned long>(std::time(nullptr)),
                                  static_cast<unsigned>(::getpid()));
  const auto& w = opts.work;
  for (auto k : w.workloads) report.workloads.push_back(workload_name(k));
  report.info = w.info;
  if (runs(w, workload::many_streams)) {
    report.stream_levels = w.stream_levels;
    report.options["writers"] = w.writers;
    report.options["many_secs"] = w.many_secs;
  }
  if (runs(w, workload::fanout)) {
    report.subscriber_levels = w.subscriber_levels;
    report.options["fanout_rate"] = w.fanout_rate;
    report.options["fanout_events"] = w.fanout_events;
  }
  if (runs(w, workload::many_streams) || runs(w, workload::fanout) || runs(w, workload::soak))
    report.options["append_bytes"] = static_cast<double>(w.append_bytes);
  if (runs(w, workload::soak)) {
    report.options["soak_secs"] = w.soak_secs;
    report.options["soak_sample_secs"] = w.soak_sample_secs;
    report.options["soak_streams"] = w.soak_streams;
    report.options["soak_rate"] = w.soak_rate;
    report.options["soak_stream_appends"] = w.soak_stream_appends;
    report.options["soak_readers"] = w.soak_readers;
  }
  if (runs(w, workload::saturation)) {
    report.saturation_streams = w.sat_stream_levels;
    report.options["append_bytes"] = static_cast<double>(w.append_bytes);
    report.options["sat_secs"] = w.sat_secs;
    report.options["sat_warmup_secs"] = w.sat_warmup_secs;
    report.options["sat_plateau"] = w.sat_plateau;
    for (std::size_t i = 0; i < w.sat_connections.size(); ++i)
      report.options[fmt::format("sat_connections_{}", i)] = w.sat_connections[i];
  }
  if (!runs(w, workload::seed)) report.concurrency.clear();
  std::vector<double> cpu_at_start(opts.targets.size(), no_value);
  for (std::size_t ti = 0; ti < opts.targets.size(); ++ti) {
    if (auto it = w.server_pids.find(opts.targets[ti].name); it != w.server_pids.end()) {
      report.targets[ti].server_pid = it->second.front();
      report.targets[ti].server_pids = it->second;
      cpu_at_start[ti] = sample_processes(it->second).cpu_s;
    }
  }

  // The plan: every (workload, level, target) step with a rough length, for the time-left estimate.
  struct step {
    double estimate_s;
    std::function<void()> run;
  };
  std::vector<step> plan;
  progress_line progress;
  if (runs(w, workload::seed)) {
    const double seed_s = 3 * opts.throughput_secs + opts.sse_count * opts.sse_interval_ms / 1000.0 + 3;
    for (unsigned c : opts.concurrency) {
      for (std::size_t ti = 0; ti < opts.targets.size(); ++ti) {
        plan.push_back({seed_s, [&, c, ti] {
                          level_run lr(opts, opts.targets[ti], ti, c, run_id, progress);
                          report.runs.push_back(lr.run());
                        }});
      }
    }
  }
  if (runs(w, workload::many_streams)) {
    for (unsigned n : w.stream_levels) {
      for (std::size_t ti = 0; ti < opts.targets.size(); ++ti) {
        plan.push_back({w.many_secs + 2 + n / 500.0, [&, n, ti] {
                          many_streams_config cfg;
                          cfg.label = fmt::format("[many-streams {} n={}]", opts.targets[ti].name, n);
                          cfg.stream_prefix = fmt::format("bench-{}-t{}-many{}", run_id, ti, n);
                          cfg.streams = n;
                          cfg.writers = w.writers;
                          cfg.append_bytes = w.append_bytes;
                          cfg.secs = w.many_secs;
                          cfg.request_timeout_ms = opts.request_timeout_ms;
                          report.many_streams.push_back(run_many_streams(opts.targets[ti], cfg, progress));
                        }});
      }
    }
  }
  if (runs(w, workload::fanout)) {
    for (unsigned n : w.subscriber_levels) {
      for (std::size_t ti = 0; ti < opts.targets.size(); ++ti) {
        plan.push_back({w.fanout_events / w.fanout_rate + 2, [&, n, ti] {
                          fanout_config cfg;
                          cfg.label = fmt::format("[fanout {} subscribers={}]", opts.targets[ti].name, n);
                          cfg.stream = fmt::format("bench-{}-t{}-fanout{}", run_id, ti, n);
                          cfg.subscribers = n;
                          cfg.rate_per_s = w.fanout_rate;
                          cfg.events = w.fanout_events;
                          cfg.payload_bytes = w.append_bytes;
                          cfg.request_timeout_ms = opts.request_timeout_ms;
                          cfg.delivery_timeout_ms = opts.sse_timeout_ms;
                          report.fanout.push_back(run_fanout(opts.targets[ti], cfg, progress));
                        }});
      }
    }
  }
  if (runs(w, workload::soak)) {
    for (std::size_t ti = 0; ti < opts.targets.size(); ++ti) {
      plan.push_back({w.soak_secs + 2, [&, ti] {
                        soak_config cfg;
                        cfg.label = fmt::format("[soak {}]", opts.targets[ti].name);
                        cfg.stream_prefix = fmt::format("bench-{}-t{}-soak", run_id, ti);
                        cfg.secs = w.soak_secs;
                        cfg.sample_secs = w.soak_sample_secs;
                        cfg.streams = w.soak_streams;
                        cfg.rate = w.soak_rate;
                        cfg.stream_appends = w.soak_stream_appends;
                        cfg.readers = w.soak_readers;
                        cfg.append_bytes = w.append_bytes;
                        cfg.request_timeout_ms = opts.request_timeout_ms;
                        cfg.server_pid = report.targets[ti].server_pid;
                        report.soak.push_back(run_soak(opts.targets[ti], cfg, progress));
                      }});
    }
  }
  if (runs(w, workload::saturation)) {
    for (unsigned n : w.sat_stream_levels) {
      for (std::size_t ti = 0; ti < opts.targets.size(); ++ti) {
        const double steps = static_cast<double>(ladder_for(w.sat_connections, n).size());
        plan.push_back({steps * (w.sat_secs + w.sat_warmup_secs + 1) + n / 2000.0, [&, n, ti] {
                          saturation_config cfg;
                          cfg.label = fmt::format("[saturation {} n={}]", opts.targets[ti].name, n);
                          cfg.stream_prefix = fmt::format("bench-{}-t{}-sat{}", run_id, ti, n);
                          cfg.streams = n;
                          cfg.connections = w.sat_connections;
                          cfg.append_bytes = w.append_bytes;
                          cfg.secs = w.sat_secs;
                          cfg.warmup_secs = w.sat_warmup_secs;
                          cfg.plateau = w.sat_plateau;
                          cfg.request_timeout_ms = opts.request_timeout_ms;
                          cfg.server_pids = report.targets[ti].server_pids;
                          report.saturation.push_back(run_saturation(opts.targets[ti], cfg, progress));
                        }});
      }
    }
  }
  double left = 0;
  for (const auto& st : plan) left += st.estimate_s;
  std::vector<int> pids;
  for (const auto& [name, list] : w.server_pids) pids.insert(pids.end(), list.begin(), list.end());
  for (const auto& st : plan) {
    progress.set_time_left(left);
    // A step that starts while a server is still busy is counted (results.json options:
    // settle_timeouts): its figures shared the cores.
    if (opts.settle_secs > 0 && !pids.empty() && !wait_until_idle(pids, opts.settle_secs)) {
      report.options["settle_timeouts"] += 1;
    }
    st.run();
    left -= st.estimate_s;
    report.finished_at = utc_now();
    for (std::size_t ti = 0; ti < opts.targets.size(); ++ti) {
      if (report.targets[ti].server_pid > 0) {
        report.targets[ti].server_cpu_s =
            sample_processes(report.targets[ti].server_pids).cpu_s - cpu_at_start[ti];
      }
    }
    if (auto s = write_results(opts.out, report); !s) return s.err();
  }
  return report;
}

}  // namespace weir::bench
