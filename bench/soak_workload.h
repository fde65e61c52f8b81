// soak_workload: a long mixed run that shows a leak or a slow creep as a line going up.
// Over `streams` stream slots, for `secs`:
//   - one writer per slot appends `append_bytes`, paced so that all slots together make `rate` appends
//     per second; after `stream_appends` appends it deletes its stream and creates the next generation
//     (so that the data held stays bounded and creation and deletion are exercised too);
//   - `readers` closed-loop catch-up readers (GET ?offset=-1, 20 ms apart) over the slots;
//   - one long-poll reader (PROTOCOL.md 5.7) and one SSE subscriber (5.8) per slot, following the tail
//     and moving to the next generation when theirs is deleted.
// Every `sample_secs` it records the server's RSS and open descriptors (/proc/PID, when the PID is
// known), the append and read p99 of the interval, the operations per second and the client's CPU.
// A reader that meets a stream deleted under it (404) moves on; that is counted, not an error. Wrong
// statuses, timeouts and transport failures are errors "soak.<kind>". The streams are deleted at the end.
#pragma once

#include <string>

#include "bench/bench_options.h"
#include "bench/bench_report.h"
#include "bench/phase_driver.h"

namespace weir::bench {

struct soak_config {
  std::string label;
  std::string stream_prefix;
  double secs = 600;
  double sample_secs = 10;
  unsigned streams = 16;
  double rate = 400;
  unsigned stream_appends = 1000;
  unsigned readers = 4;
  std::size_t append_bytes = 256;
  unsigned request_timeout_ms = 30'000;
  unsigned long_poll_timeout_ms = 90'000;  // above a server's own long-poll timeout (30 s in weir)
  int server_pid = 0;                      // 0: no /proc figures
};

soak_result run_soak(const target_spec& target, const soak_config& cfg, progress_line& progress);

}  // namespace weir::bench
