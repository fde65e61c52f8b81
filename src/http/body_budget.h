// body_budget: the node-wide memory budget for request bodies being received (server_options::
// body_budget_bytes), shared by every core's connections.
//
// Why: each connection may hold an unfinished body up to the body limit for the body timeout; without a
// total, a few dozen slow uploads hold gigabytes. A connection reserves what its body will need before
// reading it (Content-Length at head time, a chunked body in steps as it grows) and gives it back once
// the body was handed to the handler or the connection closed. Thread-safe: any core reserves and
// releases (one atomic operation each, only for bodies that do not arrive with their head).
#pragma once

#include <atomic>
#include <cstddef>

#include "base/assert.h"

namespace weir::http {

class body_budget {
 public:
  // 0: unlimited (every reservation succeeds, nothing is counted).
  explicit body_budget(std::size_t limit) : limit_(limit) {}

  // Takes `n` bytes if they fit under the limit; false leaves the total unchanged.
  bool try_reserve(std::size_t n) {
    if (limit_ == 0) return true;
    std::size_t cur = used_.load(std::memory_order_relaxed);
    do {
      if (n > limit_ || cur > limit_ - n) return false;
    } while (!used_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed));
    return true;
  }

  void release(std::size_t n) {
    if (limit_ == 0 || n == 0) return;
    std::size_t before = used_.fetch_sub(n, std::memory_order_relaxed);
    WEIR_ASSERT(before >= n, "body budget released {} of {} reserved", n, before);
  }

  std::size_t used() const { return used_.load(std::memory_order_relaxed); }
  std::size_t limit() const { return limit_; }

 private:
  const std::size_t limit_;
  std::atomic<std::size_t> used_{0};
};

}  // namespace weir::http
