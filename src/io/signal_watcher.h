// signal_watcher: turns SIGTERM/SIGINT (stop) and SIGHUP (reload) into a callback on a small dedicated
// thread, so the callback may do ordinary things (e.g. http::server::stop(), logging) instead of being
// restricted to async-signal-safe calls.
//
// Usage (in main, before any other thread starts so every thread inherits the blocked mask):
//   io::signal_watcher::block_termination_signals();
//   http::server srv(...); srv.start();
//   io::signal_watcher watcher([&](int) { srv.stop(); });
//   srv.run();
#pragma once

#include <atomic>
#include <functional>
#include <thread>

namespace weir::io {

class signal_watcher {
 public:
  // Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (and the threads it starts afterwards).
  static void block_termination_signals();

  // Starts the watcher thread; `on_signal(signo)` runs on it for every SIGTERM/SIGINT/SIGHUP received
  // (the callback decides what each means: a SIGHUP must not stop a server).
  explicit signal_watcher(std::function<void(int)> on_signal);
  ~signal_watcher();  // stops and joins the thread
  signal_watcher(const signal_watcher&) = delete;
  signal_watcher& operator=(const signal_watcher&) = delete;

 private:
  void run();

  std::function<void(int)> on_signal_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace weir::io
