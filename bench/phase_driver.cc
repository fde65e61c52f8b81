#include "bench/phase_driver.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "client/http_connection.h"

namespace weir::bench {

// The HTTP client is weir_client (src/client), shared with `weir stream`.
using client::mono_ns;

double process_cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

phase_driver::phase_driver() = default;

void phase_driver::arm_sweep() {
  loop_.add_timer(sweep_every_, [this] {
    if (sweep_) sweep_();
    if (!loop_.stopping()) arm_sweep();
  });
}

bool phase_driver::run(std::chrono::milliseconds bound, std::function<void()> sweep,
                       std::chrono::milliseconds sweep_every) {
  sweep_ = std::move(sweep);
  sweep_every_ = sweep_every;
  bool in_time = true;
  loop_.add_timer(bound, [this, &in_time] {
    in_time = false;
    loop_.stop();
  });
  arm_sweep();
  const double cpu0 = process_cpu_seconds();
  const auto t0 = mono_ns();
  loop_.update_now();
  loop_.run();
  cpu_.wall_s = static_cast<double>(mono_ns() - t0) / 1e9;
  cpu_.cpu_s = process_cpu_seconds() - cpu0;
  return in_time;
}

std::string format_duration(double seconds) {
  if (!(seconds > 0)) return "0s";
  const auto s = static_cast<long>(seconds + 0.5);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

void progress_line::set_time_left(double seconds) {
  left_s_ = seconds;
  left_set_ns_ = mono_ns();
}

void progress_line::update(const std::string& line) {
  static const bool tty = ::isatty(STDERR_FILENO) == 1;
  const auto now = mono_ns();
  std::string text = line;
  if (left_s_ >= 0) {
    text += " | about " + format_duration(left_s_ - static_cast<double>(now - left_set_ns_) / 1e9) + " left";
  }
  if (tty) {
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    dirty_ = true;
  } else if (now - last_ns_ >= 5'000'000'000) {
    std::fprintf(stderr, "%s\n", text.c_str());
    last_ns_ = now;
  }
}

void progress_line::done(const std::string& text) {
  if (dirty_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s\n", text.c_str());
  dirty_ = false;
  last_ns_ = mono_ns();
}

}  // namespace weir::bench
