// cli_process: a `weir stream` child process for the integration tests, with its standard input, output
// and error on pipes. A test waits for what the process prints (poll(2) on the pipes, with a deadline
// that only bounds a failure), never for a fixed time. Stopped by its PID: the destructor SIGKILLs a
// process still running; PR_SET_PDEATHSIG covers a test driver that crashes.
//
// Used from the test's thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::cli_test {

class cli_process {
 public:
  // Runs `binary args...` with `input` on its standard input (then closed).
  cli_process(const std::string& binary, const std::vector<std::string>& args, std::string_view input = {});
  ~cli_process();
  cli_process(const cli_process&) = delete;
  cli_process& operator=(const cli_process&) = delete;

  // Reads output until `done(stdout, stderr)` holds. False if the process ended first or `limit` passed.
  bool wait_for(const std::function<bool(const std::string& out, const std::string& err)>& done,
                std::chrono::milliseconds limit);
  // Reads the rest of the output and reaps the process: its exit code, or -1 (killed, or still running
  // after `limit`, then SIGKILLed).
  int wait_exit(std::chrono::milliseconds limit);

  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  // One poll(2) round over the open pipes; false once both are closed.
  bool pump(int timeout_ms);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_, err_;
};

struct cli_result {
  int code = -1;
  std::string out, err;
};

// Runs a `weir stream` command to its end (bounded at 30 s).
cli_result run_cli(const std::string& binary, const std::vector<std::string>& args,
                   std::string_view input = {});

}  // namespace weir::cli_test
