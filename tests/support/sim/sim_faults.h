// What the two cluster simulations (tests/unit/raft, tests/unit/cluster) share: their random faults
// (links, disk latency), drawn from the scheduler's generator in a fixed order so that a seed replays,
// and their trace and first-failure reporting.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "support/sim/mem_network.h"
#include "support/sim/sim_scheduler.h"

namespace weir::raft {

// Every link's faults for a simulation's network step: loss 0-30%, delays of 1 to 2-40 ms, reordered
// or not.
inline link_faults random_link_faults(sim_scheduler& s) {
  static constexpr double drops[] = {0.0, 0.02, 0.1, 0.3};
  static constexpr int delays[] = {2, 10, 40};
  link_faults f;
  f.drop = drops[s.uniform(0, 3)];
  f.max_delay = std::chrono::milliseconds(delays[s.uniform(0, 2)]);
  f.min_delay = std::chrono::milliseconds(1);
  f.reorder = s.chance(0.5);
  return f;
}

// A disk's slowest sync for a simulation's slow-disk step: a slow disk widens every window between a
// write and its sync (where a crash loses it).
inline std::int64_t random_sync_latency_ms(sim_scheduler& s) {
  static constexpr std::int64_t latencies[] = {1, 4, 30, 80};
  return latencies[s.uniform(0, 3)];
}

// A line of a run's trace (with verbose on), stamped with the simulated time.
template <class... Args>
void sim_trace(bool verbose, const sim_scheduler& s, fmt::format_string<Args...> f, Args&&... args) {
  if (verbose) fmt::print("t={:>6}ms  {}\n", s.now_ms(), fmt::format(f, std::forward<Args>(args)...));
}

// Keeps a run's first failure in `report` (its `ok` and `failure`), with the seed that replays it.
template <class Report>
void sim_fail(Report& report, std::uint64_t seed, const sim_scheduler& s, const std::string& what) {
  if (!report.ok) return;
  report.ok = false;
  report.failure = fmt::format("seed {} at t={}ms: {}", seed, s.now_ms(), what);
}

}  // namespace weir::raft
