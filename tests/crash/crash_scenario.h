// crash_scenario: the whole crash test, cycle after cycle on one data directory:
//   load (several writer threads) -> SIGKILL at a random moment -> [restart and SIGKILL again during
//   recovery] -> restart -> producer retries -> verify everything ever acknowledged (crash_verifier).
// Seeded (WEIR_CRASH_SEED reruns a seed; the seed is printed), bounded in time and requests, and the
// server is always stopped by its PID. Failures are reported through GoogleTest with a summary of what
// was lost and the server's log tail; the data directory is kept for inspection when a cycle fails.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace weir::crash_test {

struct scenario_options {
  int cycles = 3;
  int writers = 6;
  std::chrono::milliseconds min_load{150};  // load time before the kill, uniform in [min, max]
  std::chrono::milliseconds max_load{1500};
  std::size_t old_ack_sample = 400;  // ack offsets of earlier cycles re-read per stream and cycle
};

void run_crash_scenario(const scenario_options& o);

}  // namespace weir::crash_test
