#include "bench/many_streams_workload.h"

#include <algorithm>

#include <fmt/format.h>

#include "bench/request_loop.h"
#include "bench/results_writer.h"

namespace weir::bench {
namespace {

constexpr const char* binary_type = "application/octet-stream";

bool success_2xx(int status) {
  return status >= 200 && status < 300;
}

}  // namespace

many_streams_result run_many_streams(const target_spec& target, const many_streams_config& cfg,
                                     progress_line& progress) {
  many_streams_result r;
  r.target = target.name;
  r.streams = cfg.streams;
  const unsigned writers = std::min(cfg.writers, cfg.streams);
  r.writers = writers;
  // request_loop counts its errors into a run_result; they are moved into this workload's tally.
  run_result scratch;
  auto take_errors = [&] {
    for (auto& [kind, n] : scratch.error_kinds) r.error_kinds[kind] += n;
    scratch.error_kinds.clear();
  };
  std::vector<std::string> names(cfg.streams);
  for (unsigned i = 0; i < cfg.streams; ++i) names[i] = fmt::format("{}-{}", cfg.stream_prefix, i);

  // One request per stream, spread over the writers' connections: stream i is created, appended to and
  // deleted by writer i % writers, whose connection goes to the target's base of that writer.
  auto per_stream = [&](const std::string& phase, auto head_of, bool want_created) {
    std::vector<loop_worker> workers(writers);
    for (unsigned i = 0; i < cfg.streams; ++i) {
      const auto& ep = target.base(i % writers);
      workers[i % writers].ep = ep;
      workers[i % writers].heads.push_back(head_of(ep, names[i]));
    }
    std::vector<std::size_t> answered(writers, 0);
    std::uint64_t good = 0;
    loop_config lc;
    lc.phase = phase;
    lc.label = cfg.label;
    lc.request_timeout_ms = cfg.request_timeout_ms;
    lc.max_requests_per_worker = workers[0].heads.size();
    lc.check = [&](const http_response& resp, std::size_t w, std::uint64_t) -> std::string {
      ++answered[w];
      const bool ok = want_created ? (resp.status == 201 || resp.status == 200) : success_2xx(resp.status);
      if (!ok) return fmt::format("status_{}", resp.status);
      ++good;
      return "";
    };
    lc.worker_done = [&](std::size_t w) { return answered[w] >= workers[w].heads.size(); };
    run_request_loop(workers, lc, scratch, progress);
    take_errors();
    return good;
  };

  const auto created = per_stream(
      "many_create",
      [&](const endpoint& ep, const std::string& n) {
        return format_request_head("PUT", ep, n, "", binary_type, 0, true);
      },
      true);
  r.counts["streams_created"] = created;
  if (created > 0) {
    const std::string body(cfg.append_bytes, 'm');
    std::vector<loop_worker> workers(writers);
    for (unsigned i = 0; i < cfg.streams; ++i) {
      auto& w = workers[i % writers];
      w.ep = target.base(i % writers);
      w.body = body;
      w.with_body = true;
      w.heads.push_back(format_request_head("POST", w.ep, names[i], "", binary_type, body.size(), true));
    }
    loop_config lc;
    lc.phase = "many";
    lc.label = cfg.label;
    lc.request_timeout_ms = cfg.request_timeout_ms;
    lc.duration_s = cfg.secs;
    lc.check = [](const http_response& resp, std::size_t, std::uint64_t) -> std::string {
      return success_2xx(resp.status) ? "" : fmt::format("status_{}", resp.status);
    };
    auto out = run_request_loop(workers, lc, scratch, progress);
    take_errors();
    r.ops_s = static_cast<double>(out.ok) / out.elapsed_s;
    if (out.latency.count() > 0) {
      r.p50_ms = out.latency.percentile_ms(50);
      r.p99_ms = out.latency.percentile_ms(99);
    }
    r.counts["appends"] = out.ok;
    r.counts["append_bytes"] = out.sent_bytes;
    r.cpu = out.cpu;
  }
  per_stream(
      "many_delete",
      [&](const endpoint& ep, const std::string& n) {
        return format_request_head("DELETE", ep, n, "", "", 0, false);
      },
      false);
  progress.done(
      fmt::format("{} many-streams {} streams x {} writers: {} appends/s, p50 {} ms, p99 {} ms "
                  "(client cpu {:.0f}%, {} errors)",
                  cfg.label, r.streams, r.writers, format_number(r.ops_s), format_number(r.p50_ms),
                  format_number(r.p99_ms), 100 * r.cpu.share(), r.errors()));
  return r;
}

}  // namespace weir::bench
