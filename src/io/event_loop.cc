#include "io/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/assert.h"
#include "base/clock.h"
#include "base/log.h"

namespace weir::io {
namespace {
thread_local event_loop* tl_current = nullptr;

std::int64_t mono_now_ms() {
  return mono_now_us() / 1000;
}
}  // namespace

event_loop::event_loop(unsigned index) : index_(index) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  WEIR_ASSERT(epoll_fd_ >= 0, "epoll_create1: {}", std::strerror(errno));
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  WEIR_ASSERT(event_fd_ >= 0, "eventfd: {}", std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;  // level-triggered: drained explicitly after every wake-up
  ev.data.ptr = nullptr;
  WEIR_ASSERT(::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, event_fd_, &ev) == 0, "epoll_ctl: {}",
              std::strerror(errno));
  update_now();
  probe_due_us_ = now_us_ + lag_probe_us;
}

event_loop::~event_loop() {
  ::close(event_fd_);
  ::close(epoll_fd_);
}

event_loop* event_loop::current() {
  return tl_current;
}

void event_loop::update_now() {
  now_us_ = mono_now_us();
  now_ms_ = now_us_ / 1000;
}

int event_loop::probe_timeout_ms(int timeout) const {
  // The clock is read again: the turn that just ended may have taken a while since now_us_.
  const std::int64_t left_us = probe_due_us_ - mono_now_us();
  const std::int64_t probe = left_us <= 0 ? 0 : (left_us + 999) / 1000;  // never wake before it is due
  return timeout < 0 || probe < timeout ? static_cast<int>(probe) : timeout;
}

void event_loop::note_turn(std::int64_t began_ms, int events, std::size_t tasks) {
  const std::int64_t took = mono_now_ms() - began_ms;
  if (took < slow_turn_ms) return;
  slow_turns_.fetch_add(1, std::memory_order_relaxed);
  if (took > longest_turn_ms_.load(std::memory_order_relaxed)) {
    longest_turn_ms_.store(took, std::memory_order_relaxed);
  }
  const std::int64_t now = began_ms + took;
  if (slow_logged_ms_ >= 0 && now - slow_logged_ms_ < 10'000) {
    ++slow_unlogged_;
    return;
  }
  log::warn(
      "weir: event loop {}: one turn took {} ms ({} I/O events, about {} posted tasks); {} more slow turns "
      "since the last such line",
      index_, took, events, tasks, slow_unlogged_);
  slow_logged_ms_ = now;
  slow_unlogged_ = 0;
}

bool event_loop::add_fd(int fd, std::uint32_t events, io_handler* h) {
  epoll_event ev{};
  ev.events = events | EPOLLET;
  ev.data.ptr = h;
  return ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) == 0;
}

bool event_loop::modify_fd(int fd, std::uint32_t events, io_handler* h) {
  epoll_event ev{};
  ev.events = events | EPOLLET;
  ev.data.ptr = h;
  return ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) == 0;
}

void event_loop::remove_fd(int fd) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

void event_loop::wake() {
  if (wake_pending_.exchange(true, std::memory_order_acq_rel)) return;
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(event_fd_, &one, sizeof one);
  wakeups_written_.fetch_add(1, std::memory_order_relaxed);
}

void event_loop::stop() {
  stop_.store(true, std::memory_order_release);
  wake();
}

void event_loop::post(task fn) {
  {
    std::lock_guard lock(post_mu_);
    posted_.push_back(std::move(fn));
  }
  // Dekker pairing with run(): we publish pending_ then read sleeping_; the loop publishes sleeping_ then
  // reads pending_. With seq_cst at least one side sees the other, so a task is never stranded, and a
  // busy loop is never woken through the eventfd.
  pending_.fetch_add(1, std::memory_order_seq_cst);
  if (tl_current != this && sleeping_.load(std::memory_order_seq_cst)) wake();
}

event_loop::timer_id event_loop::add_timer(std::chrono::milliseconds delay, task fn) {
  timer_id id = next_timer_id_++;
  heap_.push(timer_entry{now_ms_ + delay.count(), id});
  timers_.emplace(id, std::move(fn));
  return id;
}

bool event_loop::cancel_timer(timer_id id) {
  return timers_.erase(id) == 1;
}

int event_loop::next_timeout_ms() const {
  if (heap_.empty()) return -1;
  std::int64_t d = heap_.top().deadline - now_ms_;
  if (d <= 0) return 0;
  return d > 3'600'000 ? 3'600'000 : static_cast<int>(d);
}

void event_loop::run_timers() {
  // Timers added by a firing timer with zero delay run on the next iteration, not in this loop.
  std::int64_t now = now_ms_;
  while (!heap_.empty() && heap_.top().deadline <= now) {
    timer_id id = heap_.top().id;
    heap_.pop();
    auto it = timers_.find(id);
    if (it == timers_.end()) continue;  // cancelled
    task fn = std::move(it->second);
    timers_.erase(it);
    fn();
  }
  // Drop cancelled entries from the top so the next timeout is not computed from a dead timer.
  while (!heap_.empty() && !timers_.contains(heap_.top().id)) heap_.pop();
}

void event_loop::run_posted() {
  if (pending_.load(std::memory_order_acquire) == 0) return;
  {
    std::lock_guard lock(post_mu_);
    running_.swap(posted_);
    pending_.fetch_sub(running_.size(), std::memory_order_acq_rel);
  }
  for (auto& fn : running_) fn();
  running_.clear();
}

void event_loop::drain_eventfd() {
  std::uint64_t v;
  [[maybe_unused]] auto n = ::read(event_fd_, &v, sizeof v);
  wake_pending_.store(false, std::memory_order_release);
}

void event_loop::run() {
  event_loop* prev = tl_current;
  tl_current = this;
  constexpr int max_events = 256;
  epoll_event events[max_events];
  while (!stop_.load(std::memory_order_acquire)) {
    int timeout = next_timeout_ms();
    if (timeout != 0) timeout = probe_timeout_ms(timeout);
    sleeping_.store(true, std::memory_order_seq_cst);
    if (pending_.load(std::memory_order_seq_cst) != 0) timeout = 0;
    int n = ::epoll_wait(epoll_fd_, events, max_events, timeout);
    sleeping_.store(false, std::memory_order_relaxed);
    ++turn_;
    update_now();
    if (now_us_ >= probe_due_us_) {
      lag_us_.observe(static_cast<std::uint64_t>(now_us_ - probe_due_us_));
      probe_due_us_ = now_us_ + lag_probe_us;
    }
    const std::int64_t began = now_ms_;
    if (n < 0) {
      WEIR_ASSERT(errno == EINTR, "epoll_wait: {}", std::strerror(errno));
      n = 0;
    }
    for (int i = 0; i < n; ++i) {
      auto* h = static_cast<io_handler*>(events[i].data.ptr);
      if (h == nullptr) {
        drain_eventfd();
      } else {
        h->on_io(events[i].events);
      }
    }
    run_timers();
    const std::size_t tasks = pending_.load(std::memory_order_relaxed);
    run_posted();
    run_turn_end();
    note_turn(began, n, tasks);
  }
  // Tasks posted before stop() still run, so a sender's cleanup is not lost.
  run_posted();
  run_turn_end();
  tl_current = prev;
}

void event_loop::run_turn_end() {
  while (!turn_end_.empty()) {
    ending_.swap(turn_end_);
    for (auto& fn : ending_) fn();
    ending_.clear();
  }
}

}  // namespace weir::io
