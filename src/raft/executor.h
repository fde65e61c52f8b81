// executor: what the raft module needs from an event loop: run a task soon, run one later, read the
// time. io::event_loop has these members (post, add_timer, cancel_timer, now_ms); an adapter wires it in.
// The simulations implement it with a seeded scheduler and a manual clock (tests/support/sim).
// Single-threaded: every call comes from the executor's own thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace weir::raft {

class executor {
 public:
  using task = std::function<void()>;
  using timer_id = std::uint64_t;  // 0 is never a valid id

  virtual ~executor() = default;
  // Monotonic milliseconds.
  virtual std::int64_t now_ms() const = 0;
  // Runs `fn` after the current task, FIFO; never inside this call.
  virtual void post(task fn) = 0;
  // One-shot timer. cancel_timer() returns false if it already fired or was cancelled.
  virtual timer_id add_timer(std::chrono::milliseconds delay, task fn) = 0;
  virtual bool cancel_timer(timer_id id) = 0;
};

}  // namespace weir::raft
