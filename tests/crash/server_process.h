// server_process: one `weir serve` child process for the crash test, on a fresh loopback port per start,
// always stopped by its PID: kill() sends SIGKILL (the crash under test) and the destructor does the same
// for a server still running when a test fails. The child also gets PR_SET_PDEATHSIG, so a crashing test
// driver cannot leave it behind. Output (stdout and stderr) goes to one log file, appended per start.
//
// Used from the test's main thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace weir::crash_test {

class server_process {
 public:
  // `args` follow `weir serve --listen 127.0.0.1:PORT --data-dir DIR`.
  server_process(std::string binary, std::filesystem::path data_dir, std::vector<std::string> args,
                 std::filesystem::path log);
  ~server_process();
  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  // Arguments for the next start() (e.g. another --fsync mode).
  void set_args(std::vector<std::string> args) { args_ = std::move(args); }
  // Starts the server on `port`, or on a new free port when it is 0 (the previous process must be gone).
  // `note` heads its log part.
  void start(const std::string& note, std::uint16_t port = 0);
  // Polls the port until the server answers an HTTP request. False (with `why`) if the process exited or
  // `limit` passed.
  bool wait_ready(std::chrono::milliseconds limit, std::string& why);
  // SIGKILL and reap. Returns false (with `why`) if the process had already exited on its own.
  bool kill(std::string& why);
  // True while the child has not exited (reaps it if it has; `why` then says how it ended).
  bool alive(std::string& why);

  bool running() const { return pid_ > 0; }
  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  // The last `bytes` of the log, for failure messages.
  std::string log_tail(std::size_t bytes) const;

 private:
  std::string binary_;
  std::filesystem::path data_dir_;
  std::vector<std::string> args_;
  std::filesystem::path log_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

// A port on 127.0.0.1 that nothing listens on right now.
std::uint16_t free_loopback_port();

// Flags of `weir serve --help` the binary knows about (e.g. "--fsync"), to pick the durability mode.
bool serve_supports_flag(const std::string& binary, const std::string& flag);

}  // namespace weir::crash_test
