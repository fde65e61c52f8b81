#include "io/signal_watcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace weir::io {
namespace {

TEST(signal_watcher, sigterm_and_sigint_become_callbacks) {
  signal_watcher::block_termination_signals();
  std::atomic<int> last{0};
  std::atomic<int> count{0};
  {
    signal_watcher w([&](int sig) {
      last = sig;
      ++count;
    });
    ::kill(::getpid(), SIGTERM);  // blocked everywhere: stays pending until the watcher takes it
    for (int i = 0; i < 500 && count < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(last.load(), SIGTERM);
    ::kill(::getpid(), SIGINT);
    for (int i = 0; i < 500 && count < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(last.load(), SIGINT);
  }  // the destructor stops the thread without a signal
  EXPECT_EQ(count.load(), 2);
}

// SIGHUP (reload the JWKS file) reaches the callback like the others, and the callback, not the watcher,
// decides that it does not stop anything: the watcher keeps taking signals after it.
TEST(signal_watcher, sighup_becomes_a_callback_too) {
  signal_watcher::block_termination_signals();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> seen;
  {
    signal_watcher w([&](int sig) {
      std::lock_guard lock(mu);
      seen.push_back(sig);
      cv.notify_all();
    });
    std::unique_lock lock(mu);
    ::kill(::getpid(), SIGHUP);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return seen.size() == 1; }));
    ::kill(::getpid(), SIGTERM);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return seen.size() == 2; }));
  }
  EXPECT_EQ(seen, (std::vector<int>{SIGHUP, SIGTERM}));
}

}  // namespace
}  // namespace weir::io
