#include "io/signal_watcher.h"

#include <pthread.h>
#include <signal.h>

#include <ctime>

namespace weir::io {
namespace {
sigset_t termination_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);  // reload (weir serve: the JWKS file), not a stop: the callback tells them apart
  return set;
}
}  // namespace

void signal_watcher::block_termination_signals() {
  sigset_t set = termination_set();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

signal_watcher::signal_watcher(std::function<void(int)> on_signal) : on_signal_(std::move(on_signal)) {
  // The watcher thread must have the signals blocked too, or sigtimedwait() could miss them.
  block_termination_signals();
  thread_ = std::thread([this] { run(); });
}

signal_watcher::~signal_watcher() {
  stop_.store(true);
  thread_.join();
}

void signal_watcher::run() {
  sigset_t set = termination_set();
  // Bounded wait so the destructor can stop the thread without sending it a signal.
  timespec poll{0, 100'000'000};
  while (!stop_.load()) {
    int sig = ::sigtimedwait(&set, nullptr, &poll);
    if (sig > 0) on_signal_(sig);
  }
}

}  // namespace weir::io
