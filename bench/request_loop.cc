#include "bench/request_loop.h"

#include <memory>

#include <fmt/format.h>

namespace weir::bench {
namespace {

// Transport failures are named after their cause, so a reader can tell a timeout from a reset.
std::string transport_kind(const http_response& r) {
  if (r.error == "timeout") return "timeout";
  if (r.error.rfind("connect", 0) == 0) return "connect";
  if (r.error.rfind("malformed", 0) == 0 || r.error.rfind("bad chunked", 0) == 0) return "malformed";
  return "transport";
}

}  // namespace

loop_outcome run_request_loop(std::vector<loop_worker>& workers, const loop_config& cfg, run_result& result,
                              progress_line& progress) {
  loop_outcome out;
  phase_driver driver;
  std::vector<std::unique_ptr<http_connection>> conns;
  conns.reserve(workers.size());
  for (auto& w : workers) conns.push_back(std::make_unique<http_connection>(driver.loop(), w.ep));

  const std::int64_t start_ns = mono_ns();
  const bool timed = cfg.duration_s > 0;
  const std::int64_t deadline_ns =
      timed ? start_ns + static_cast<std::int64_t>(cfg.duration_s * 1e9) : INT64_MAX;
  std::vector<std::uint64_t> issued(workers.size(), 0);
  std::size_t running = 0;
  std::int64_t last_done_ns = start_ns;

  auto count_error = [&](const std::string& kind) {
    ++result.error_kinds[cfg.phase + "." + kind];
    ++out.errors;
  };

  std::function<void(std::size_t)> send;
  auto next_or_stop = [&](std::size_t i) {
    const bool more = (!timed || mono_ns() < deadline_ns) &&
                      (cfg.max_requests_per_worker == 0 || issued[i] < cfg.max_requests_per_worker) &&
                      !(cfg.worker_done && cfg.worker_done(i));
    if (more) {
      if (cfg.retry_delay_ms > 0) {
        driver.loop().add_timer(std::chrono::milliseconds(cfg.retry_delay_ms), [&send, i] { send(i); });
      } else {
        send(i);
      }
      return;
    }
    if (--running == 0) driver.finish();
  };
  // A logical operation may take several requests (a catch-up read that the server answers in chunks):
  // its latency runs from the first request to the last response, its body is the sum of theirs.
  struct operation {
    std::int64_t start_ns = 0;
    std::uint64_t body_bytes = 0;
    unsigned hops = 0;
    std::string follow_head;
  };
  std::vector<operation> ops(workers.size());
  std::function<void(std::size_t, std::uint64_t, std::string_view)> issue;
  issue = [&](std::size_t i, std::uint64_t n, std::string_view head) {
    conns[i]->request(head, workers[i].body, cfg.keep_body, [&, i, n](http_response& r) {
      auto& op = ops[i];
      op.body_bytes += r.body_bytes;
      ++op.hops;
      if (r.ok() && cfg.follow && op.hops < cfg.max_hops) {
        std::string next;
        if (cfg.follow(r, op.body_bytes, i, next)) {
          op.follow_head = std::move(next);
          ++out.follow_requests;
          issue(i, n, op.follow_head);
          return;
        }
      }
      r.sent_ns = op.start_ns;
      r.body_bytes = op.body_bytes;
      std::string kind = r.ok() ? cfg.check(r, i, n) : transport_kind(r);
      if (!kind.empty()) {
        count_error(kind);
      } else if (r.done_ns <= deadline_ns) {
        ++out.ok;
        out.sent_bytes += workers[i].body.size() * op.hops;
        out.received_bytes += r.body_bytes;
        out.latency.record_ns(static_cast<std::uint64_t>(r.done_ns - r.sent_ns));
        last_done_ns = std::max(last_done_ns, r.done_ns);
      }
      next_or_stop(i);
    });
  };
  send = [&](std::size_t i) {
    auto& w = workers[i];
    const auto n = issued[i]++;
    ops[i] = operation{mono_ns(), 0, 0, {}};
    issue(i, n, w.heads[n % w.heads.size()]);
  };

  // Connect every worker first, so that connection set-up is not measured.
  if (workers.empty()) return out;
  std::size_t connecting = workers.size();
  std::vector<bool> connected(workers.size(), false);
  bool started = false;
  auto start_all = [&] {
    started = true;
    for (std::size_t i = 0; i < workers.size(); ++i) running += connected[i] ? 1 : 0;
    if (running == 0) driver.finish();
    for (std::size_t i = 0; i < workers.size(); ++i) {
      if (connected[i]) send(i);
    }
  };
  for (std::size_t i = 0; i < workers.size(); ++i) {
    conns[i]->connect([&, i](bool ok, std::string_view) {
      connected[i] = ok;
      if (!ok) count_error("connect");  // this worker sends nothing
      if (--connecting == 0) start_all();
    });
  }

  const std::int64_t timeout_ns = static_cast<std::int64_t>(cfg.request_timeout_ms) * 1'000'000;
  auto bound = std::chrono::milliseconds(static_cast<std::int64_t>(cfg.duration_s * 1000) +
                                         2 * cfg.request_timeout_ms +
                                         (cfg.max_requests_per_worker + 1) * cfg.retry_delay_ms + 5000);
  if (!timed && cfg.max_requests_per_worker > 0) {
    bound += std::chrono::milliseconds(cfg.max_requests_per_worker * cfg.request_timeout_ms);
  }
  const bool in_time = driver.run(bound, [&] {
    const auto now = mono_ns();
    for (auto& c : conns) c->expire_if_older(now - timeout_ns);
    const double secs = static_cast<double>(now - start_ns) / 1e9;
    progress.update(timed ? fmt::format("{} {} {:.0f}/{:.0f} s, {} ok, {} errors", cfg.label, cfg.phase, secs,
                                        cfg.duration_s, out.ok, out.errors)
                          : fmt::format("{} {} {:.0f} s, {} ok, {} errors", cfg.label, cfg.phase, secs,
                                        out.ok, out.errors));
  });
  if (!in_time) {
    out.cut_short = true;
    std::uint64_t unfinished = 0;
    for (auto& c : conns) unfinished += c->busy() ? 1 : 0;
    if (!started) unfinished = workers.size();
    if (unfinished) result.error_kinds[cfg.phase + ".unfinished"] += unfinished;
    out.errors += unfinished;
  }
  for (auto& c : conns) c->close();
  out.elapsed_s = timed ? cfg.duration_s : static_cast<double>(last_done_ns - start_ns) / 1e9;
  out.cpu = driver.cpu();
  return out;
}

}  // namespace weir::bench
