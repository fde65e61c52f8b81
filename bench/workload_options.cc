#include "bench/workload_options.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace weir::bench {
namespace {

error bad(std::string reason) {
  return error{1, std::move(reason)};
}

template <class T>
bool parse_uint(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

// "all" is the side-by-side set of bench/compare; saturation runs on its own (bench/compare --saturation).
constexpr workload all_workloads[] = {workload::seed, workload::many_streams, workload::fanout,
                                      workload::soak};
constexpr workload named_workloads[] = {workload::seed, workload::many_streams, workload::fanout,
                                        workload::soak, workload::saturation};

}  // namespace

const char* workload_name(workload w) {
  switch (w) {
    case workload::seed:
      return "seed";
    case workload::many_streams:
      return "many-streams";
    case workload::fanout:
      return "fanout";
    case workload::soak:
      return "soak";
    case workload::saturation:
      return "saturation";
  }
  return "?";
}

result<std::vector<workload>> parse_workloads(std::string_view list) {
  if (list == "all") return std::vector<workload>(std::begin(all_workloads), std::end(all_workloads));
  std::vector<workload> out;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const auto name = list.substr(0, comma);
    const auto* it = std::find_if(std::begin(named_workloads), std::end(named_workloads),
                                  [&](workload w) { return name == workload_name(w); });
    if (it == std::end(named_workloads)) {
      return bad(fmt::format(
          "--workloads: unknown workload '{}' (seed, many-streams, fanout, soak, saturation, all)", name));
    }
    if (std::find(out.begin(), out.end(), *it) != out.end())
      return bad(fmt::format("--workloads: '{}' given twice", name));
    out.push_back(*it);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  if (out.empty()) return bad("--workloads: no workload");
  return out;
}

result<std::vector<unsigned>> parse_levels(std::string_view list, std::string_view option, unsigned max) {
  std::vector<unsigned> out;
  while (!list.empty()) {
    const auto comma = list.find(',');
    unsigned v = 0;
    if (!parse_uint(list.substr(0, comma), v) || v == 0 || v > max) {
      return bad(fmt::format("{}: bad level '{}' (1..{})", option, list.substr(0, comma), max));
    }
    if (!out.empty() && v <= out.back()) return bad(fmt::format("{}: levels must increase", option));
    out.push_back(v);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  if (out.empty()) return bad(fmt::format("{}: no level", option));
  return out;
}

result<std::pair<std::string, std::vector<int>>> parse_server_pid(std::string_view spec) {
  const auto eq = spec.find('=');
  auto fail = [&] {
    return bad(fmt::format("--server-pid {}: expected NAME=PID or NAME=PID,PID,...", spec));
  };
  if (eq == std::string_view::npos || eq == 0) return fail();
  std::vector<int> pids;
  std::string_view list = spec.substr(eq + 1);
  while (true) {
    const auto comma = list.find(',');
    int pid = 0;
    if (!parse_uint(list.substr(0, comma), pid) || pid <= 0) return fail();
    pids.push_back(pid);
    if (comma == std::string_view::npos) break;
    list = list.substr(comma + 1);
  }
  return std::pair<std::string, std::vector<int>>{std::string(spec.substr(0, eq)), std::move(pids)};
}

result<std::pair<std::string, std::string>> parse_info(std::string_view spec) {
  const auto eq = spec.find('=');
  if (eq == std::string_view::npos || eq == 0) return bad(fmt::format("--info {}: expected KEY=VALUE", spec));
  return std::pair<std::string, std::string>{std::string(spec.substr(0, eq)),
                                             std::string(spec.substr(eq + 1))};
}

status validate(const workload_options& w) {
  if (w.workloads.empty()) return bad("--workloads: no workload");
  if (w.stream_levels.empty() || w.subscriber_levels.empty()) return bad("empty stream or subscriber levels");
  if (w.writers == 0 || w.writers > 10'000) return bad("--writers must be in 1..10000");
  if (w.append_bytes == 0) return bad("--append-bytes must be positive");
  if (runs(w, workload::fanout) && w.append_bytes < 32)
    return bad("--append-bytes must be at least 32 for fanout (the event tag)");
  if (!(w.many_secs > 0) || w.many_secs > 3600) return bad("--many-secs must be in (0, 3600]");
  if (!(w.fanout_rate > 0) || w.fanout_rate > 10'000)
    return bad("--fanout-rate must be in (0, 10000] per second");
  if (w.fanout_events == 0) return bad("--fanout-events must be positive");
  if (!(w.soak_secs > 0) || w.soak_secs > 7 * 24 * 3600) return bad("--soak-secs must be in (0, 1 week]");
  if (!(w.soak_sample_secs >= 1) || w.soak_sample_secs > w.soak_secs)
    return bad("--soak-sample-secs must be at least 1 and at most --soak-secs");
  if (w.soak_streams == 0 || w.soak_streams > 10'000) return bad("--soak-streams must be in 1..10000");
  if (!(w.soak_rate > 0) || w.soak_rate > 1e6) return bad("--soak-rate must be in (0, 1e6] per second");
  if (w.soak_stream_appends == 0) return bad("--soak-stream-appends must be positive");
  if (runs(w, workload::saturation)) {
    if (w.sat_stream_levels.empty() || w.sat_connections.empty())
      return bad("--sat-streams and --sat-connections need at least one level");
    if (!(w.sat_secs > 0) || w.sat_secs > 3600) return bad("--sat-secs must be in (0, 3600]");
    if (!(w.sat_warmup_secs >= 0) || w.sat_warmup_secs > 600)
      return bad("--sat-warmup-secs must be in [0, 600]");
    if (!(w.sat_plateau >= 0) || w.sat_plateau > 1) return bad("--sat-plateau must be in [0, 1]");
  }
  return {};
}

bool runs(const workload_options& w, workload k) {
  return std::find(w.workloads.begin(), w.workloads.end(), k) != w.workloads.end();
}

}  // namespace weir::bench
