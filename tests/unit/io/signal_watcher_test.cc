#include "io/signal_watcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

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

}  // namespace
}  // namespace weir::io
