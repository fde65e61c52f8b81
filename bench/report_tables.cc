#include "bench/report_tables.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/results_writer.h"

namespace weir::bench {
namespace {

std::string pct(double change) {
  if (!std::isfinite(change)) return "n/a";
  return fmt::format("{:+.1f}%", 100 * change);
}

template <class R>
const R* find(const std::vector<R>& results, const std::string& target, auto match) {
  for (const auto& r : results) {
    if (r.target == target && match(r)) return &r;
  }
  return nullptr;
}

// "12 errors (many.status_404 10, many.timeout 2)"
std::string errors_text(std::uint64_t total, const std::map<std::string, std::uint64_t>& kinds) {
  std::string out = fmt::format("{} errors (", total);
  bool first = true;
  for (const auto& [kind, n] : kinds) {
    if (n == 0) continue;
    out += fmt::format("{}{} {}", first ? "" : ", ", kind, n);
    first = false;
  }
  return out + ")";
}

}  // namespace

std::string cpu_cell(const phase_cpu& cpu, unsigned threads) {
  if (!std::isfinite(cpu.share())) return "n/a";
  const bool saturated = cpu.share() > saturated_share * static_cast<double>(threads);
  return fmt::format("{:.0f}%{}", 100 * cpu.share(), saturated ? " (saturated)" : "");
}

report_table summary_table(const bench_report& report) {
  report_table t;
  t.title = "Who won where";
  t.note = "Best: the target with the best figure, and its margin over the next best (same run).";
  t.header = {"Workload", "Figure"};
  for (const auto& tg : report.targets) t.header.push_back(tg.name);
  t.header.push_back("Best");
  // values[i] for target i; NaN where none.
  auto row = [&](std::string workload, std::string figure, const std::vector<double>& values,
                 bool higher_is_better, bool flagged, auto fmt_value) {
    std::vector<std::string> cells{std::move(workload), std::move(figure)};
    for (double v : values) cells.push_back(fmt_value(v));
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (std::isfinite(values[i])) order.push_back(i);
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return higher_is_better ? values[a] > values[b] : values[a] < values[b];
    });
    std::string best = "n/a";
    if (order.size() == 1) best = report.targets[order[0]].name;
    if (order.size() >= 2) {
      const double a = values[order[0]], b = values[order[1]];
      std::string margin;
      if (a > 0 && b > 0) margin = fmt::format(" ({}x)", format_number(higher_is_better ? a / b : b / a));
      best = a == b ? "tie" : report.targets[order[0]].name + margin;
    }
    cells.push_back(best);
    t.rows.push_back(std::move(cells));
    t.flagged.push_back(flagged);
  };
  auto number = [](double v) { return format_number(v); };
  for (unsigned n : report.stream_levels) {
    std::vector<double> ops, p99;
    bool flag = false;
    for (const auto& tg : report.targets) {
      const auto* r = find(report.many_streams, tg.name, [&](const auto& x) { return x.streams == n; });
      ops.push_back(r ? r->ops_s : no_value);
      p99.push_back(r ? r->p99_ms : no_value);
      flag = flag || (r && (r->saturated() || r->errors() > 0));
    }
    if (std::none_of(ops.begin(), ops.end(), [](double v) { return std::isfinite(v); })) continue;
    row("many-streams", fmt::format("{} streams: appends/s", n), ops, true, flag, number);
    row("many-streams", fmt::format("{} streams: p99 ms", n), p99, false, flag, number);
  }
  for (unsigned n : report.subscriber_levels) {
    std::vector<double> p99;
    bool flag = false;
    for (const auto& tg : report.targets) {
      const auto* r = find(report.fanout, tg.name, [&](const auto& x) { return x.subscribers == n; });
      p99.push_back(r ? r->p99_ms : no_value);
      flag = flag || (r && (r->saturated() || r->errors() > 0));
    }
    if (std::none_of(p99.begin(), p99.end(), [](double v) { return std::isfinite(v); })) continue;
    row("fanout", fmt::format("{} subscribers: delivery p99 ms", n), p99, false, flag, number);
  }
  if (!report.soak.empty()) {
    std::vector<double> rss, fds, p99;
    bool flag = false;
    for (const auto& tg : report.targets) {
      const auto* r = find(report.soak, tg.name, [](const auto&) { return true; });
      const auto d = r ? drift_of(*r) : soak_drift{};
      // Growth is judged by its size: a shrinking footprint is as good as a flat one.
      rss.push_back(std::isfinite(d.rss_change()) ? std::max(0.0, d.rss_change()) : no_value);
      fds.push_back(std::isfinite(d.fds_change()) ? std::max(0.0, d.fds_change()) : no_value);
      double worst = no_value;
      if (r) {
        for (const auto& s : r->samples) {
          if (std::isfinite(s.append_p99_ms))
            worst = std::isfinite(worst) ? std::max(worst, s.append_p99_ms) : s.append_p99_ms;
        }
      }
      p99.push_back(worst);
      flag = flag || (r && (r->saturated() || r->errors() > 0));
    }
    row("soak", "RSS growth after the first minute", rss, false, flag, pct);
    row("soak", "descriptor growth after the first minute", fds, false, flag, pct);
    row("soak", "worst interval append p99 ms", p99, false, flag, number);
  }
  return t;
}

std::vector<report_table> seed_tables(const bench_report& report) {
  std::vector<report_table> out;
  if (report.runs.empty()) return out;
  for (const auto& m : metrics()) {
    report_table t;
    t.title = m.title;
    t.note = fmt::format("{}{}", m.unit, m.higher_is_better ? ", higher is better" : ", lower is better");
    t.header = {"Concurrency"};
    for (const auto& tg : report.targets) t.header.push_back(tg.name);
    for (unsigned c : report.concurrency) {
      std::vector<std::string> cells{std::to_string(c)};
      bool flag = false;
      for (const auto& tg : report.targets) {
        const auto* r = find(report.runs, tg.name, [&](const run_result& x) { return x.concurrency == c; });
        if (!r) {
          cells.push_back("n/a");
          continue;
        }
        std::string cell = format_number(m.get(*r));
        if (m.cpu_phase) {
          auto it = r->client_cpu.find(m.cpu_phase);
          if (it != r->client_cpu.end() && std::isfinite(it->second.share())) {
            cell += " (client cpu " + cpu_cell(it->second) + ")";
            flag = flag || it->second.share() > saturated_share;
          }
        }
        cells.push_back(std::move(cell));
      }
      t.rows.push_back(std::move(cells));
      t.flagged.push_back(flag);
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<report_table> workload_tables(const bench_report& report) {
  std::vector<report_table> out;
  if (!report.many_streams.empty()) {
    report_table t;
    t.title = "Many streams";
    t.note = fmt::format("{} B appends, closed-loop writers round-robin over the streams; latency in ms",
                         format_number(report.option("append_bytes")));
    t.header = {"Streams", "Target", "Writers", "Appends/s", "p50 ms", "p99 ms", "Errors", "Client CPU"};
    for (unsigned n : report.stream_levels) {
      for (const auto& tg : report.targets) {
        const auto* r = find(report.many_streams, tg.name, [&](const auto& x) { return x.streams == n; });
        if (!r) continue;
        t.rows.push_back({std::to_string(n), tg.name, std::to_string(r->writers), format_number(r->ops_s),
                          format_number(r->p50_ms), format_number(r->p99_ms), std::to_string(r->errors()),
                          cpu_cell(r->cpu, r->threads)});
        t.flagged.push_back(r->saturated() || r->errors() > 0);
      }
    }
    out.push_back(std::move(t));
  }
  if (!report.saturation.empty()) {
    report_table t;
    t.title = "Saturation";
    t.note = fmt::format(
        "{} B appends, one idempotent producer per stream (Redis: XADD), over a connection ladder until "
        "throughput stops climbing; the ceiling is the best step; latency in ms, CPU in us per append; RSS "
        "in MiB (after creating the streams, and at the ceiling)",
        format_number(report.option("append_bytes")));
    t.header = {
        "Streams", "Target", "Ladder (appends/s)", "Ceiling appends/s",    "Connections",   "p50",
        "p99",     "p999",   "Server CPU/append",  "Generator CPU/append", "Generator CPU", "KiB/stream",
        "RSS",     "Errors"};
    for (unsigned n : report.saturation_streams) {
      for (const auto& tg : report.targets) {
        const auto* r = find(report.saturation, tg.name, [&](const auto& x) { return x.streams == n; });
        if (!r) continue;
        std::string ladder;
        for (const auto& l : r->levels)
          ladder +=
              fmt::format("{}{}: {}", ladder.empty() ? "" : ", ", l.connections, format_number(l.ops_s));
        const auto* top = r->top();
        auto v = [&](double x) { return format_number(top ? x : no_value); };
        t.rows.push_back(
            {std::to_string(n), tg.name, ladder, v(top ? top->ops_s : 0),
             top ? std::to_string(top->connections) : "n/a", v(top ? top->p50_ms : 0),
             v(top ? top->p99_ms : 0), v(top ? top->p999_ms : 0), v(top ? top->server_us_per_op() : 0),
             v(top ? top->client_us_per_op() : 0), top ? cpu_cell(top->client) : "n/a",
             format_number(r->kib_per_stream()),
             fmt::format("{} / {}", format_number(r->rss_streams_mib), v(top ? top->server_rss_mib : 0)),
             std::to_string(r->errors())});
        t.flagged.push_back(r->saturated() || r->errors() > 0);
      }
    }
    out.push_back(std::move(t));
  }
  if (!report.fanout.empty()) {
    report_table t;
    t.title = "SSE fan-out";
    t.note =
        "One writer at a fixed rate, N SSE subscribers on one stream; latency from the append's send to "
        "each subscriber's receipt, in ms. Lost and duplicated must be 0.";
    t.header = {"Subscribers", "Target", "Rate/s",     "p50 ms", "p99 ms",    "max ms",
                "Delivered",   "Lost",   "Duplicated", "Errors", "Client CPU"};
    for (unsigned n : report.subscriber_levels) {
      for (const auto& tg : report.targets) {
        const auto* r = find(report.fanout, tg.name, [&](const auto& x) { return x.subscribers == n; });
        if (!r) continue;
        t.rows.push_back({std::to_string(n), tg.name, format_number(r->rate_per_s), format_number(r->p50_ms),
                          format_number(r->p99_ms), format_number(r->max_ms),
                          fmt::format("{}/{}", r->delivered, r->expected), std::to_string(r->lost),
                          std::to_string(r->duplicated), std::to_string(r->errors()),
                          cpu_cell(r->cpu, r->threads)});
        t.flagged.push_back(r->saturated() || r->errors() > 0 || r->lost > 0 || r->duplicated > 0);
      }
    }
    out.push_back(std::move(t));
  }
  if (!report.soak.empty()) {
    report_table t;
    t.title = "Soak: where it ended against the first minute";
    t.note = "Server RSS and open descriptors from /proc/PID; the target: within 10% of the first minute's.";
    t.header = {"Target",        "Duration s",
                "Baseline at s", "RSS MiB (base -> end)",
                "RSS change",    "fds (base -> end)",
                "fds change",    "Appends",
                "Reads",         "Errors",
                "Client CPU"};
    for (const auto& r : report.soak) {
      const auto d = drift_of(r);
      auto count = [&](const char* k) {
        auto it = r.counts.find(k);
        return it == r.counts.end() ? std::string("0") : std::to_string(it->second);
      };
      t.rows.push_back({r.target, format_number(r.duration_s), format_number(d.base_t_s),
                        fmt::format("{} -> {}", format_number(d.base_rss_mib), format_number(d.end_rss_mib)),
                        pct(d.rss_change()),
                        fmt::format("{} -> {}", format_number(d.base_fds), format_number(d.end_fds)),
                        pct(d.fds_change()), count("appends"), count("reads"), std::to_string(r.errors()),
                        cpu_cell(r.cpu, r.threads)});
      t.flagged.push_back(r.saturated() || r.errors() > 0 || std::fabs(d.rss_change()) > 0.1 ||
                          std::fabs(d.fds_change()) > 0.1);
    }
    out.push_back(std::move(t));
    for (const auto& r : report.soak) {
      report_table s;
      s.title = "Soak samples: " + r.target;
      s.note = "Every sample covers the interval that ended at its time.";
      s.header = {"t s", "RSS MiB", "fds", "append p99 ms", "read p99 ms", "ops/s", "Client CPU"};
      for (const auto& x : r.samples) {
        s.rows.push_back({format_number(x.t_s), format_number(x.rss_mib), format_number(x.fds),
                          format_number(x.append_p99_ms), format_number(x.read_p99_ms),
                          format_number(x.ops_s), cpu_cell({1.0, x.client_share}, r.threads)});
        s.flagged.push_back(std::isfinite(x.client_share) && x.client_share > saturated_share * r.threads);
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<std::string> report_warnings(const bench_report& report) {
  std::vector<std::string> w;
  for (const auto& r : report.runs) {
    for (const auto& [phase, cpu] : r.client_cpu) {
      if (std::isfinite(cpu.share()) && cpu.share() > saturated_share) {
        w.push_back(
            fmt::format("seed {} at concurrency {}: the load generator was saturated in phase {} "
                        "({:.0f}% of its one thread): the figure measures the client as much as the server",
                        r.target, r.concurrency, phase, 100 * cpu.share()));
      }
    }
    if (r.errors() > 0) {
      w.push_back(fmt::format("seed {} at concurrency {}: {}", r.target, r.concurrency,
                              errors_text(r.errors(), r.error_kinds)));
    }
  }
  auto tally = [&](const std::string& what, const workload_tally& t) {
    if (t.saturated()) {
      w.push_back(
          fmt::format("{}: the load generator was saturated ({:.0f}% of a core for {} thread{}): the "
                      "figure measures the client as much as the server",
                      what, 100 * t.cpu.share(), t.threads, t.threads == 1 ? "" : "s"));
    }
    if (t.errors() > 0) w.push_back(fmt::format("{}: {}", what, errors_text(t.errors(), t.error_kinds)));
  };
  for (const auto& r : report.many_streams)
    tally(fmt::format("many-streams {} at {} streams", r.target, r.streams), r);
  for (const auto& r : report.saturation)
    tally(fmt::format("saturation {} at {} streams (at the ceiling)", r.target, r.streams), r);
  for (const auto& r : report.fanout) {
    const auto what = fmt::format("fanout {} at {} subscribers", r.target, r.subscribers);
    tally(what, r);
    if (r.lost > 0 || r.duplicated > 0)
      w.push_back(fmt::format("{}: {} events lost, {} duplicated", what, r.lost, r.duplicated));
  }
  for (const auto& r : report.soak) tally(fmt::format("soak {}", r.target), r);
  return w;
}

std::string to_markdown(const report_table& table) {
  std::string out = fmt::format("**{}**", table.title);
  if (!table.note.empty()) out += fmt::format(" ({})", table.note);
  out += "\n\n|";
  for (const auto& h : table.header) out += " " + h + " |";
  out += "\n|";
  for (std::size_t i = 0; i < table.header.size(); ++i) out += i == 0 ? "---|" : "---:|";
  out += "\n";
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    out += "|";
    for (std::size_t c = 0; c < table.rows[r].size(); ++c) {
      const bool mark = c == 0 && r < table.flagged.size() && table.flagged[r];
      out += " " + table.rows[r][c] + (mark ? " (!)" : "") + " |";
    }
    out += "\n";
  }
  return out;
}

}  // namespace weir::bench
