// clock: the source of time for code that must be testable. Production code uses system_clock_source;
// tests use manual_clock and move time themselves (Seastar's manual clock).
#pragma once

#include <chrono>
#include <cstdint>

namespace weir {

using millis = std::chrono::milliseconds;

// The monotonic clock in microseconds, read now (the event loops' clock; a deadline within one turn).
inline std::int64_t mono_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class clock_source {
 public:
  virtual ~clock_source() = default;
  // Wall-clock milliseconds since the Unix epoch (for TTLs, Expires-At, cursors).
  virtual std::int64_t wall_ms() const = 0;
  // Monotonic milliseconds (for timeouts).
  virtual std::int64_t mono_ms() const = 0;
};

class system_clock_source final : public clock_source {
 public:
  std::int64_t wall_ms() const override {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  }
  std::int64_t mono_ms() const override {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
  }
};

class manual_clock final : public clock_source {
 public:
  explicit manual_clock(std::int64_t wall_start_ms = 1'700'000'000'000) : wall_(wall_start_ms) {}
  std::int64_t wall_ms() const override { return wall_; }
  std::int64_t mono_ms() const override { return mono_; }
  void advance(millis d) {
    wall_ += d.count();
    mono_ += d.count();
  }

 private:
  std::int64_t wall_;
  std::int64_t mono_ = 0;
};

}  // namespace weir
