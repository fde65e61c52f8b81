// A stand-in event loop for tests that run the node log over a real thread_flusher: the flusher posts
// its completions here from its own thread, and the test's thread runs them (as the node's loop would).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

namespace weir::raft::test_support {

class posted_loop {
 public:
  // What the thread_flusher is given to post its completions with.
  std::function<void(std::function<void()>)> poster() {
    return [this](std::function<void()> fn) {
      std::lock_guard lock(mu_);
      posted_.push_back(std::move(fn));
      cv_.notify_one();
    };
  }
  // Runs what was posted, after waiting up to 50 ms for something to be.
  void run_posted() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return !posted_.empty(); });
    auto fns = std::move(posted_);
    posted_.clear();
    lock.unlock();
    for (auto& fn : fns) fn();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::function<void()>> posted_;
};

}  // namespace weir::raft::test_support
