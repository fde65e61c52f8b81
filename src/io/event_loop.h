// event_loop: one per core (thread-per-core). Owns an epoll instance, its timers and the inbound
// cross-core task queue. Runs on exactly one thread; every method except post() and stop() must be called
// on that thread.
//
// CONTRACT (written before the implementation; the implementer may add, not break). Other modules
// (protocol, server, bench) rely on exactly these members.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace weir::io {

class event_loop {
 public:
  using task = std::function<void()>;
  using timer_id = std::uint64_t;  // 0 is never a valid id

  explicit event_loop(unsigned index);
  ~event_loop();
  event_loop(const event_loop&) = delete;
  event_loop& operator=(const event_loop&) = delete;

  unsigned index() const { return index_; }

  // The loop of the calling thread, or nullptr on a thread that runs no loop.
  static event_loop* current();

  // Runs until stop(); returns after the current iteration.
  void run();
  // Thread-safe.
  void stop();

  // Thread-safe: runs `fn` on this loop's thread, in FIFO order per sender, soon (wakes the loop).
  void post(task fn);

  // One-shot timer on this loop. cancel_timer() returns false if it already fired or was cancelled.
  timer_id add_timer(std::chrono::milliseconds delay, task fn);
  bool cancel_timer(timer_id id);

  // Monotonic milliseconds, cached at the start of each loop iteration.
  std::int64_t now_ms() const;

  // ... fd registration and internals: implementer's choice.

 private:
  unsigned index_;
};

}  // namespace weir::io
