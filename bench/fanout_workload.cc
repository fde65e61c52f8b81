#include "bench/fanout_workload.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/request_loop.h"
#include "bench/results_writer.h"
#include "bench/sse_workload.h"

namespace weir::bench {
namespace {

// PROTOCOL.md 5.8: text/* data events travel without base64, so the tags read as sent.
constexpr const char* sse_type = "text/plain";

// One request on one connection (creating or deleting the stream); its response, or a transport error.
http_response one_request(const target_spec& target, const std::string& phase, std::string head,
                          const fanout_config& cfg, run_result& scratch, progress_line& progress) {
  std::vector<loop_worker> workers(1);
  workers[0].ep = target.base(0);
  workers[0].heads.push_back(std::move(head));
  http_response last;
  loop_config lc;
  lc.phase = phase;
  lc.label = cfg.label;
  lc.request_timeout_ms = cfg.request_timeout_ms;
  lc.max_requests_per_worker = 1;
  lc.check = [&](const http_response& resp, std::size_t, std::uint64_t) -> std::string {
    last = resp;
    return resp.status >= 200 && resp.status < 300 ? "" : fmt::format("status_{}", resp.status);
  };
  run_request_loop(workers, lc, scratch, progress);
  return last;
}

}  // namespace

fanout_result run_fanout(const target_spec& target, const fanout_config& cfg, progress_line& progress) {
  fanout_result r;
  r.target = target.name;
  r.subscribers = cfg.subscribers;
  r.rate_per_s = cfg.rate_per_s;
  run_result scratch;
  const auto created = one_request(
      target, "fanout_create", format_request_head("PUT", target.base(0), cfg.stream, "", sse_type, 0, true),
      cfg, scratch, progress);
  if (created.status == 200 || created.status == 201) {
    sse_config sc;
    sc.label = cfg.label;
    sc.payload_bytes = cfg.payload_bytes;
    sc.event_count = cfg.events;
    sc.readers_per_stream = cfg.subscribers;
    sc.interval_ms = static_cast<unsigned>(std::max(1.0, std::round(1000.0 / cfg.rate_per_s)));
    sc.request_timeout_ms = cfg.request_timeout_ms;
    sc.delivery_timeout_ms = cfg.delivery_timeout_ms;
    sc.error_prefix = "fanout";
    const sse_stream stream{cfg.stream, created.next_offset.empty() ? "-1" : created.next_offset};
    auto out = run_sse_workload(target, {stream}, sc, scratch, progress);
    if (out.latency.count() > 0) {
      r.p50_ms = out.latency.percentile_ms(50);
      r.p99_ms = out.latency.percentile_ms(99);
      r.max_ms = static_cast<double>(out.latency.max_us()) / 1000.0;
    }
    r.expected = out.expected;
    r.delivered = out.delivered;
    r.lost = out.lost;
    r.duplicated = out.duplicated;
    r.cpu = out.cpu;
    r.counts["events_appended"] = cfg.events;
    if (auto it = scratch.counts.find("sse_reconnects"); it != scratch.counts.end())
      r.counts["reconnects"] = it->second;
  }
  one_request(target, "fanout_delete",
              format_request_head("DELETE", target.base(0), cfg.stream, "", "", 0, false), cfg, scratch,
              progress);
  r.error_kinds = std::move(scratch.error_kinds);
  progress.done(
      fmt::format("{} fanout {} subscribers at {}/s: p50 {} ms, p99 {} ms, max {} ms, {}/{} delivered, "
                  "{} lost, {} duplicated (client cpu {:.0f}%, {} errors)",
                  cfg.label, r.subscribers, format_number(r.rate_per_s), format_number(r.p50_ms),
                  format_number(r.p99_ms), format_number(r.max_ms), r.delivered, r.expected, r.lost,
                  r.duplicated, 100 * r.cpu.share(), r.errors()));
  return r;
}

}  // namespace weir::bench
