// phase_driver: runs one measured phase of `weir bench` on a fresh event loop in the calling thread:
// a periodic sweep (request timeouts, the progress line), a hard time bound so that no phase can hang,
// and the client's own CPU use (getrusage) and wall time across the phase.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "bench/bench_report.h"
#include "io/event_loop.h"

namespace weir::bench {

class progress_line;

class phase_driver {
 public:
  phase_driver();
  io::event_loop& loop() { return loop_; }

  // Runs the loop until finish(), calling `sweep` every `sweep_every` (with the loop's clock). Returns
  // false if `bound` passed first (the phase was cut short: the caller counts what did not finish).
  bool run(std::chrono::milliseconds bound, std::function<void()> sweep,
           std::chrono::milliseconds sweep_every = std::chrono::milliseconds(100));
  void finish() { loop_.stop(); }

  const phase_cpu& cpu() const { return cpu_; }

 private:
  void arm_sweep();

  io::event_loop loop_{0};
  std::function<void()> sweep_;
  std::chrono::milliseconds sweep_every_{100};
  phase_cpu cpu_;
};

// CPU seconds (user + system) this process has used so far.
double process_cpu_seconds();

// The one-line progress report on stderr: rewritten in place on a terminal, a line every few seconds
// otherwise (so logs stay short).
// update() lines end with an estimate of the time left in the whole run, when one was set.
class progress_line {
 public:
  void update(const std::string& text);
  void done(const std::string& text);  // a final line for the phase, always printed
  // About `seconds` of the run are left from now (the runner's plan; negative: unknown).
  void set_time_left(double seconds);

 private:
  std::int64_t last_ns_ = 0;
  bool dirty_ = false;
  std::int64_t left_set_ns_ = 0;
  double left_s_ = -1;
};

// "12m05s", "45s": a duration for the progress line.
std::string format_duration(double seconds);

}  // namespace weir::bench
