#include "bench/saturation_workload.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>

#include <fmt/format.h>

#include "bench/latency_histogram.h"
#include "bench/proc_sampler.h"
#include "bench/request_loop.h"
#include "bench/resp_connection.h"
#include "bench/results_writer.h"

namespace weir::bench {
namespace {

// What one request came back with: an HTTP status (Redis: 200, or 500 for an error reply) or, with
// status 0, the transport failure.
struct outcome {
  int status = 0;
  std::string error;
  std::int64_t sent_ns = 0;
  std::int64_t done_ns = 0;
};
using outcome_fn = std::function<void(const outcome&)>;

enum class op : std::uint8_t { create, append, remove };

// One writer's connection, to a Durable Streams server or to Redis.
class writer_connection {
 public:
  virtual ~writer_connection() = default;
  virtual void connect(std::function<void(bool ok, std::string_view why)> done) = 0;
  virtual void send(op o, unsigned stream, std::uint64_t seq, outcome_fn done) = 0;
  virtual bool busy() const = 0;
  virtual void expire_if_older(std::int64_t started_before_ns) = 0;
  virtual void close() = 0;
  // Whether `status` is the success `o` expects.
  virtual bool success(op o, int status) const = 0;
};

class http_writer final : public writer_connection {
 public:
  http_writer(io::event_loop& loop, const endpoint& ep, const std::string& prefix, const std::string& body)
      : conn_(loop, ep), ep_(ep), prefix_(prefix), body_(body) {}
  void connect(std::function<void(bool, std::string_view)> done) override { conn_.connect(std::move(done)); }
  void send(op o, unsigned stream, std::uint64_t seq, outcome_fn done) override {
    std::string_view body;
    switch (o) {
      case op::create:
        head_ = fmt::format(
            "PUT {}/{}-{} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/octet-stream\r\n"
            "Content-Length: 0\r\n\r\n",
            ep_.prefix, prefix_, stream, ep_.host, ep_.port);
        break;
      case op::append:
        // PROTOCOL.md, idempotent producers: all three headers together; the seq counts per stream.
        head_ = fmt::format(
            "POST {}/{}-{} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/octet-stream\r\n"
            "Content-Length: {}\r\nProducer-Id: bench-{}\r\nProducer-Epoch: 0\r\nProducer-Seq: {}\r\n\r\n",
            ep_.prefix, prefix_, stream, ep_.host, ep_.port, body_.size(), stream, seq);
        body = body_;
        break;
      case op::remove:
        head_ = fmt::format("DELETE {}/{}-{} HTTP/1.1\r\nHost: {}:{}\r\n\r\n", ep_.prefix, prefix_, stream,
                            ep_.host, ep_.port);
        break;
    }
    conn_.request(head_, body, false, [done = std::move(done)](http_response& r) {
      done(outcome{r.status, r.error, r.sent_ns, r.done_ns});
    });
  }
  bool busy() const override { return conn_.busy(); }
  void expire_if_older(std::int64_t t) override { conn_.expire_if_older(t); }
  void close() override { conn_.close(); }
  bool success(op o, int status) const override {
    if (o == op::create) return status == 201 || status == 200;
    return status >= 200 && status < 300;
  }

 private:
  http_connection conn_;
  endpoint ep_;
  const std::string& prefix_;
  const std::string& body_;
  std::string head_;
};

class redis_writer final : public writer_connection {
 public:
  redis_writer(io::event_loop& loop, const endpoint& ep, const std::string& prefix, const std::string& body)
      : conn_(loop, ep), prefix_(prefix), body_(body) {}
  void connect(std::function<void(bool, std::string_view)> done) override {
    conn_.connect([done = std::move(done)](bool ok) { done(ok, ok ? "" : "connect failed"); });
  }
  void send(op o, unsigned stream, std::uint64_t, outcome_fn done) override {
    const std::string key = fmt::format("s:{}-{}", prefix_, stream);
    switch (o) {
      case op::create:
        command_ = resp_command({"XADD", key, "*", "c", "1"});
        break;
      case op::append:
        command_ = resp_command({"XADD", key, "*", "d", body_});
        break;
      case op::remove:
        command_ = resp_command({"DEL", key});
        break;
    }
    conn_.send(command_, [done = std::move(done)](resp_reply& r) {
      done(outcome{r.status, r.status == 500 ? "" : r.error, r.sent_ns, r.done_ns});
    });
  }
  bool busy() const override { return conn_.busy(); }
  void expire_if_older(std::int64_t t) override { conn_.expire_if_older(t); }
  void close() override { conn_.close(); }
  bool success(op, int status) const override { return status == 200; }

 private:
  resp_connection conn_;
  const std::string& prefix_;
  const std::string& body_;
  std::string command_;
};

std::string failure_kind(const outcome& o) {
  if (o.status != 0) return fmt::format("status_{}", o.status);
  if (o.error == "timeout") return "timeout";
  if (o.error.rfind("connect", 0) == 0) return "connect";
  if (o.error.rfind("malformed", 0) == 0) return "malformed";
  return "transport";
}

// p99 of an event loop's lag histogram (io::event_loop::lag_us) between two reads, in ms: the upper
// bound of the bucket that holds it (NaN without probes).
double lag_p99_ms(const metrics::histogram_counts& before, const metrics::histogram_counts& after) {
  std::vector<std::uint64_t> d(after.counts.size(), 0);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    d[i] = after.counts[i] - (i < before.counts.size() ? before.counts[i] : 0);
    total += d[i];
  }
  if (total == 0) return no_value;
  const auto want = static_cast<std::uint64_t>(std::ceil(0.99 * static_cast<double>(total)));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    seen += d[i];
    if (seen >= want) {
      return i < std::size(metrics::latency_us_bounds)
                 ? static_cast<double>(metrics::latency_us_bounds[i]) / 1000.0
                 : std::numeric_limits<double>::infinity();
    }
  }
  return no_value;
}

class saturation_run {
 public:
  saturation_run(const target_spec& target, const saturation_config& cfg, progress_line& progress)
      : target_(target),
        cfg_(cfg),
        progress_(progress),
        redis_(target.redis),
        body_(cfg.append_bytes, 's'),
        next_seq_(cfg.streams, 0) {}

  saturation_result run() {
    r_.target = target_.name;
    r_.protocol = redis_ ? "redis" : "http";
    r_.streams = cfg_.streams;
    r_.rss_before_mib = sample_processes(cfg_.server_pids).rss_mib;
    const auto t0 = mono_ns();
    const std::uint64_t created = per_stream(op::create, "sat_create");
    r_.create_s = static_cast<double>(mono_ns() - t0) / 1e9;
    r_.counts["streams_created"] = created;
    r_.rss_streams_mib = sample_processes(cfg_.server_pids).rss_mib;
    if (created == cfg_.streams) {
      const auto ladder = ladder_for(cfg_.connections, cfg_.streams);
      for (std::size_t i = 0; i < ladder.size(); ++i) {
        r_.levels.push_back(level(ladder[i]));
        if (i > 0 && !still_climbing(r_.levels[i - 1].ops_s, r_.levels[i].ops_s, cfg_.plateau)) break;
      }
    }
    r_.ceiling = ceiling_of(r_.levels);
    if (const auto* top = r_.top()) r_.cpu = top->client;
    per_stream(op::remove, "sat_delete");
    const auto* top = r_.top();
    progress_.done(fmt::format(
        "{} ceiling {} appends/s at {} connections, p50 {} ms, p99 {} ms, p999 {} ms, server {} us/append, "
        "generator {} us/append ({:.0f}% of a core), {} errors",
        cfg_.label, format_number(top ? top->ops_s : no_value), top ? top->connections : 0,
        format_number(top ? top->p50_ms : no_value), format_number(top ? top->p99_ms : no_value),
        format_number(top ? top->p999_ms : no_value), format_number(top ? top->server_us_per_op() : no_value),
        format_number(top ? top->client_us_per_op() : no_value), top ? 100 * top->client.share() : 0.0,
        r_.errors()));
    return std::move(r_);
  }

 private:
  std::unique_ptr<writer_connection> make(io::event_loop& loop, std::size_t i) {
    const auto& ep = target_.base(i);
    if (redis_) return std::make_unique<redis_writer>(loop, ep, cfg_.stream_prefix, body_);
    return std::make_unique<http_writer>(loop, ep, cfg_.stream_prefix, body_);
  }

  void count_error(const std::string& phase, const outcome& o) {
    ++r_.error_kinds[phase + "." + failure_kind(o)];
  }

  // Creates or deletes every stream, `setup_connections` at a time; returns how many succeeded.
  std::uint64_t per_stream(op o, const std::string& phase) {
    phase_driver driver;
    const unsigned n = std::max(1u, std::min(cfg_.setup_connections, cfg_.streams));
    std::vector<std::unique_ptr<writer_connection>> conns;
    for (unsigned i = 0; i < n; ++i) conns.push_back(make(driver.loop(), i));
    unsigned next = 0, running = n;
    std::uint64_t good = 0;
    std::function<void(std::size_t)> go = [&](std::size_t c) {
      if (next >= cfg_.streams) {
        if (--running == 0) driver.finish();
        return;
      }
      const unsigned s = next++;
      conns[c]->send(o, s, 0, [&, c](const outcome& out) {
        if (conns[c]->success(o, out.status)) {
          ++good;
        } else {
          count_error(phase, out);
        }
        go(c);
      });
    };
    for (unsigned i = 0; i < n; ++i) go(i);
    const std::int64_t timeout_ns = static_cast<std::int64_t>(cfg_.request_timeout_ms) * 1'000'000;
    const auto bound = std::chrono::milliseconds(
        static_cast<std::int64_t>(cfg_.request_timeout_ms) * (cfg_.streams / n + 2) + 5000);
    driver.run(bound, [&] {
      const auto now = mono_ns();
      for (auto& c : conns) c->expire_if_older(now - timeout_ns);
      progress_.update(fmt::format("{} {} {}/{} streams", cfg_.label, phase, next, cfg_.streams));
    });
    for (auto& c : conns) c->close();
    return good;
  }

  // One step of the ladder: `connections` writers, warm-up, measured window, drain.
  saturation_level level(unsigned connections) {
    saturation_level lv;
    lv.connections = connections;
    phase_driver driver;
    std::vector<std::unique_ptr<writer_connection>> conns;
    for (unsigned i = 0; i < connections; ++i) conns.push_back(make(driver.loop(), i));
    std::vector<unsigned> cursor(connections, 0);  // connection c writes stream c + cursor[c] * connections
    latency_histogram latency;
    bool sending = true;
    std::int64_t window_start = INT64_MAX, window_end = INT64_MAX;
    std::size_t running = 0, connecting = connections;
    proc_figures server_before{};
    double client_before = 0;
    metrics::histogram_counts lag_before;
    std::uint64_t connect_failures = 0;
    std::string first_failure;

    std::function<void(std::size_t)> next = [&](std::size_t c) {
      if (!sending) {
        if (--running == 0) driver.finish();
        return;
      }
      const unsigned per = (cfg_.streams - static_cast<unsigned>(c) + connections - 1) / connections;
      const unsigned s = static_cast<unsigned>(c) + (cursor[c]++ % per) * connections;
      conns[c]->send(op::append, s, next_seq_[s], [&, c, s](const outcome& out) {
        if (conns[c]->success(op::append, out.status)) {
          ++next_seq_[s];  // a failed append keeps its seq: the producer retries it
          if (out.status == 204) ++r_.counts["duplicates"];
          if (out.done_ns >= window_start && out.done_ns <= window_end) {
            ++lv.ok;
            latency.record_ns(static_cast<std::uint64_t>(out.done_ns - out.sent_ns));
          }
        } else {
          count_error("sat", out);
          if (out.done_ns >= window_start && out.done_ns <= window_end) ++lv.errors;
        }
        next(c);
      });
    };
    auto start_all = [&] {
      running = connections;
      for (std::size_t c = 0; c < connections; ++c) next(c);
      driver.loop().add_timer(
          std::chrono::milliseconds(static_cast<std::int64_t>(cfg_.warmup_secs * 1000)), [&] {
            server_before = sample_processes(cfg_.server_pids);
            client_before = process_cpu_seconds();
            lag_before = driver.loop().lag_us().read();
            window_start = mono_ns();
            driver.loop().add_timer(
                std::chrono::milliseconds(static_cast<std::int64_t>(cfg_.secs * 1000)), [&] {
                  window_end = mono_ns();
                  const proc_figures server_after = sample_processes(cfg_.server_pids);
                  lv.client.cpu_s = process_cpu_seconds() - client_before;
                  lv.client.wall_s = static_cast<double>(window_end - window_start) / 1e9;
                  lv.server_cpu_s = server_after.cpu_s - server_before.cpu_s;
                  lv.server_rss_mib = server_after.rss_mib;
                  lv.server_cgroup_ws_mib =
                      cfg_.server_pids.size() == 1 ? cgroup_working_set_mib(cfg_.server_pids[0]) : no_value;
                  lv.client_lag_p99_ms = lag_p99_ms(lag_before, driver.loop().lag_us().read());
                  sending = false;  // the writers stop as their requests in flight come back
                });
          });
    };
    for (std::size_t c = 0; c < connections; ++c) {
      conns[c]->connect([&](bool ok, std::string_view why) {
        if (!ok) {
          // The writer still runs: its first append connects again.
          ++r_.error_kinds["sat.connect"];
          if (connect_failures++ == 0) first_failure = std::string(why);
        }
        if (--connecting == 0) start_all();
      });
    }
    const std::int64_t timeout_ns = static_cast<std::int64_t>(cfg_.request_timeout_ms) * 1'000'000;
    const auto bound =
        std::chrono::milliseconds(static_cast<std::int64_t>((cfg_.warmup_secs + cfg_.secs) * 1000) +
                                  2 * cfg_.request_timeout_ms + 5000);
    const auto t0 = mono_ns();
    const bool in_time = driver.run(bound, [&] {
      const auto now = mono_ns();
      for (auto& c : conns) c->expire_if_older(now - timeout_ns);
      progress_.update(fmt::format("{} c={} {:.0f}/{:.0f} s, {} ok in the window", cfg_.label, connections,
                                   static_cast<double>(now - t0) / 1e9, cfg_.warmup_secs + cfg_.secs, lv.ok));
    });
    if (!in_time) {
      std::uint64_t unfinished = 0;
      for (auto& c : conns) unfinished += c->busy() ? 1 : 0;
      if (unfinished) r_.error_kinds["sat.unfinished"] += unfinished;
    }
    for (auto& c : conns) c->close();
    if (lv.client.wall_s > 0) lv.ops_s = static_cast<double>(lv.ok) / lv.client.wall_s;
    if (latency.count() > 0) {
      lv.p50_ms = latency.percentile_ms(50);
      lv.p99_ms = latency.percentile_ms(99);
      lv.p999_ms = latency.percentile_ms(99.9);
    }
    progress_.done(fmt::format(
        "{} c={}: {} appends/s, p50 {} ms, p99 {} ms, p999 {} ms, server {} us/append, generator {:.0f}% of "
        "a "
        "core ({} us/append, loop lag p99 <= {} ms), {} errors",
        cfg_.label, connections, format_number(lv.ops_s), format_number(lv.p50_ms), format_number(lv.p99_ms),
        format_number(lv.p999_ms), format_number(lv.server_us_per_op()), 100 * lv.client.share(),
        format_number(lv.client_us_per_op()), format_number(lv.client_lag_p99_ms), lv.errors));
    if (connect_failures > 0) {
      progress_.done(
          fmt::format("{} c={}: {} of {} connections failed to open at first ({}); they opened again "
                      "on their first append",
                      cfg_.label, connections, connect_failures, connections, first_failure));
    }
    return lv;
  }

  const target_spec& target_;
  const saturation_config& cfg_;
  progress_line& progress_;
  bool redis_;
  std::string body_;
  std::vector<std::uint64_t> next_seq_;  // per stream: its producer's next Producer-Seq
  saturation_result r_;
};

}  // namespace

std::vector<unsigned> ladder_for(const std::vector<unsigned>& levels, unsigned streams) {
  std::vector<unsigned> out;
  for (unsigned l : levels) {
    const unsigned c = std::min(l, streams);
    if (c > 0 && (out.empty() || c > out.back())) out.push_back(c);
  }
  return out;
}

bool still_climbing(double before, double now, double plateau) {
  if (!std::isfinite(now)) return false;
  if (!std::isfinite(before) || before <= 0) return true;
  return now > before * (1 + plateau);
}

std::size_t ceiling_of(const std::vector<saturation_level>& levels) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < levels.size(); ++i) {
    if (std::isfinite(levels[i].ops_s) &&
        (!std::isfinite(levels[best].ops_s) || levels[i].ops_s > levels[best].ops_s))
      best = i;
  }
  return best;
}

saturation_result run_saturation(const target_spec& target, const saturation_config& cfg,
                                 progress_line& progress) {
  return saturation_run(target, cfg, progress).run();
}

}  // namespace weir::bench
