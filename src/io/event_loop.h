// event_loop: one per core (thread-per-core). Owns an epoll instance (edge-triggered), its timers and the
// inbound cross-core task queue. Runs on exactly one thread; every method except post(), stop() and
// wake() must be called on that thread.
//
// CONTRACT (written before the implementation; the implementer may add, not break). Other modules
// (protocol, server, bench) rely on exactly these members: post(), add_timer(), cancel_timer(), now_ms(),
// current(), index(), run(), stop().
//
// post() is cheap: the eventfd is written only when the target loop is (about to be) asleep in
// epoll_wait and no wake-up is already pending; a busy loop picks tasks up at the end of its iteration.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <vector>

#include "base/metrics.h"

namespace weir::io {

// Something registered with an event loop for readiness events (EPOLLIN/EPOLLOUT/EPOLLRDHUP/...).
// The loop keeps a raw pointer: the owner must remove_fd() before destroying the handler.
class io_handler {
 public:
  virtual void on_io(std::uint32_t events) = 0;

 protected:
  ~io_handler() = default;
};

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
  bool stopping() const { return stop_.load(std::memory_order_acquire); }

  // Thread-safe: runs `fn` on this loop's thread, in FIFO order per sender, soon (wakes the loop).
  void post(task fn);

  // Loop thread only: runs `fn` at the end of the current turn, after its I/O events, timers and
  // posted tasks (a task posted during those runs in the next turn; this does not). Work that many
  // handlers of one turn ask for, done once: the HTTP/2 sends of a connection whose streams were
  // answered from several tasks (http::loop_context::flush_later). A function added while the turn's
  // end runs runs in that same end; called outside a turn (before run()), at the end of the next.
  void at_turn_end(task fn) { turn_end_.push_back(std::move(fn)); }

  // One-shot timer on this loop. cancel_timer() returns false if it already fired or was cancelled.
  timer_id add_timer(std::chrono::milliseconds delay, task fn);
  bool cancel_timer(timer_id id);

  // Turns so far (one per epoll_wait: its I/O events, then timers, then posted tasks); a task posted
  // during a turn's posted tasks runs in the next turn. Lets per-turn budgets refill (http::connection).
  std::uint64_t turn() const { return turn_; }

  // Monotonic milliseconds, cached at the start of each loop iteration.
  std::int64_t now_ms() const { return now_ms_; }
  // Re-reads the monotonic clock into now_ms() (the loop does it after every epoll_wait).
  void update_now();

  // fd registration (edge-triggered: the handler must drain until EAGAIN, or remember that it did not).
  // `events` is an EPOLL* mask; EPOLLET is added. Returns false (errno set) on failure.
  bool add_fd(int fd, std::uint32_t events, io_handler* h);
  bool modify_fd(int fd, std::uint32_t events, io_handler* h);
  void remove_fd(int fd);

  // Thread-safe and async-signal-safe: interrupts epoll_wait (a no-op if a wake-up is pending).
  void wake();

  // Statistics for tests and benchmarks (loop thread only).
  std::uint64_t wakeups_written() const { return wakeups_written_.load(std::memory_order_relaxed); }
  // Turns (the work after one epoll_wait: I/O handlers, timers, posted tasks) that took at least
  // slow_turn_ms, and the longest turn so far (any thread may read them). A slow turn delays everything
  // on the loop, the raft ticks and peer messages of a cluster node included (an election timeout is
  // 1-2 s), so each one is also logged (warn; at most one line per 10 s per loop, with the count of
  // those not logged).
  static constexpr std::int64_t slow_turn_ms = 250;
  std::uint64_t slow_turns() const { return slow_turns_.load(std::memory_order_relaxed); }
  std::int64_t longest_turn_ms() const { return longest_turn_ms_.load(std::memory_order_relaxed); }
  std::size_t timer_count() const { return timers_.size(); }

  // Loop lag: every lag_probe_us the loop notes how late it got round to a probe that fell due (the
  // start of the first turn at or after the due time), in microseconds (metrics::latency_us_bounds).
  // A turn that holds the loop for 30 ms makes a probe that falls due during it 0-30 ms late; an idle
  // loop wakes for the probe and reads under about 1 ms (epoll's timeout is in milliseconds). Written
  // by the loop thread, read by any (/metrics: weir_event_loop_lag_seconds).
  static constexpr std::int64_t lag_probe_us = 25'000;
  const metrics::histogram& lag_us() const { return lag_us_; }

 private:
  struct timer_entry {
    std::int64_t deadline;
    timer_id id;
    bool operator>(const timer_entry& o) const {
      return deadline != o.deadline ? deadline > o.deadline : id > o.id;
    }
  };

  int next_timeout_ms() const;
  void run_timers();
  void run_posted();
  void drain_eventfd();
  void run_turn_end();

  unsigned index_;
  int epoll_fd_ = -1;
  int event_fd_ = -1;
  std::int64_t now_ms_ = 0;
  std::uint64_t turn_ = 0;
  std::atomic<bool> stop_{false};

  // Cross-core queue: a mutex-protected vector swapped out in one go by the loop.
  std::mutex post_mu_;
  std::vector<task> posted_;
  std::vector<task> running_;   // loop thread only
  std::vector<task> turn_end_;  // at_turn_end(): loop thread only
  std::vector<task> ending_;    // the batch run_turn_end() is running
  std::atomic<std::size_t> pending_{0};
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> wake_pending_{false};
  std::atomic<std::uint64_t> wakeups_written_{0};
  std::atomic<std::uint64_t> slow_turns_{0};
  std::atomic<std::int64_t> longest_turn_ms_{0};
  std::int64_t slow_logged_ms_ = -1;  // when a slow turn was last logged
  std::uint64_t slow_unlogged_ = 0;   // slow turns since, not logged
  void note_turn(std::int64_t began_ms, int events, std::size_t tasks);
  int probe_timeout_ms(int timeout) const;  // `timeout`, shortened to wake for the next lag probe

  std::int64_t now_us_ = 0;        // the clock read behind now_ms_
  std::int64_t probe_due_us_ = 0;  // the next lag probe
  metrics::histogram lag_us_{metrics::latency_us_bounds};

  // Timers: a min-heap of deadlines; cancelled ids are removed from the map and skipped lazily.
  std::priority_queue<timer_entry, std::vector<timer_entry>, std::greater<>> heap_;
  std::unordered_map<timer_id, task> timers_;
  timer_id next_timer_id_ = 1;
};

}  // namespace weir::io
