#include "cli_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace weir::cli_test {

cli_process::cli_process(const std::string& binary, const std::vector<std::string>& args,
                         std::string_view input) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return;
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    std::vector<std::string> argv_s{binary};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  // The inputs of these tests are far below the pipe's capacity: one blocking write cannot deadlock.
  for (std::size_t done = 0; done < input.size();) {
    const auto n = ::write(in[1], input.data() + done, input.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(in[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

cli_process::~cli_process() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

bool cli_process::pump(int timeout_ms) {
  pollfd fds[2];
  int n = 0;
  if (out_fd_ >= 0) fds[n++] = {out_fd_, POLLIN, 0};
  if (err_fd_ >= 0) fds[n++] = {err_fd_, POLLIN, 0};
  if (n == 0) return false;
  if (::poll(fds, static_cast<nfds_t>(n), timeout_ms) <= 0) return true;
  for (int i = 0; i < n; ++i) {
    if (fds[i].revents == 0) continue;
    char buf[65536];
    const auto got = ::read(fds[i].fd, buf, sizeof buf);
    const bool is_out = fds[i].fd == out_fd_;
    if (got <= 0) {
      ::close(fds[i].fd);
      (is_out ? out_fd_ : err_fd_) = -1;
      continue;
    }
    (is_out ? out_ : err_).append(buf, static_cast<std::size_t>(got));
  }
  return true;
}

bool cli_process::wait_for(const std::function<bool(const std::string&, const std::string&)>& done,
                           std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done(out_, err_)) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    if (!pump(static_cast<int>(left.count()))) return done(out_, err_);
  }
  return true;
}

int cli_process::wait_exit(std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (out_fd_ >= 0 || err_fd_ >= 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pump(static_cast<int>(left.count()));
  }
  if (pid_ <= 0) return -1;
  if (out_fd_ >= 0 || err_fd_ >= 0) ::kill(pid_, SIGKILL);  // still running after `limit`
  int st = 0;
  ::waitpid(pid_, &st, 0);
  pid_ = -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

cli_result run_cli(const std::string& binary, const std::vector<std::string>& args, std::string_view input) {
  cli_process p(binary, args, input);
  cli_result r;
  r.code = p.wait_exit(std::chrono::seconds(30));
  r.out = p.out();
  r.err = p.err();
  return r;
}

}  // namespace weir::cli_test
