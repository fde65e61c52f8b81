#include "integration/s3/s3rver_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace weir::tier::test {

std::uint16_t free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  std::uint16_t port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

s3rver_process::s3rver_process() {
  char tmpl[] = "/tmp/weir-s3rver-XXXXXX";
  if (char* d = ::mkdtemp(tmpl)) dir_ = d;
}

s3rver_process::~s3rver_process() {
  stop();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

bool s3rver_process::start(std::string& why) {
  if (dir_.empty()) {
    why = "mkdtemp failed";
    return false;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    why = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  std::vector<std::string> args = {"node",        "--openssl-legacy-provider", WEIR_S3RVER_SCRIPT,
                                   WEIR_NODE_DIR, (dir_ / "data").string(),    bucket};
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    why = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(fds[1], STDOUT_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp("node", argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  pid_ = pid;
  out_fd_ = fds[0];
  // Its first line is "port N" once it listens: wait for that event (bounded, in case it never comes).
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (line.find('\n') == std::string::npos) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      why = "s3rver printed no port within 30 s";
      return false;
    }
    pollfd p{out_fd_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[256];
    ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n <= 0) {
      why = "s3rver exited before printing its port (is tests/node installed? npm install there)";
      return false;
    }
    line.append(buf, static_cast<std::size_t>(n));
  }
  if (line.rfind("port ", 0) != 0) {
    why = "unexpected first line from s3rver: " + line;
    return false;
  }
  port_ = static_cast<std::uint16_t>(std::atoi(line.c_str() + 5));
  return port_ != 0;
}

void s3rver_process::stop() {
  if (pid_ > 0) {
    // Give it up to 2 s to close its server (woken by its exit through a pidfd); then make sure.
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    ::kill(pid_, SIGTERM);
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      if (::poll(&p, 1, 2000) == 1 && ::waitpid(pid_, nullptr, WNOHANG) == pid_) pid_ = -1;
      ::close(pidfd);
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  if (out_fd_ >= 0) {
    ::close(out_fd_);
    out_fd_ = -1;
  }
}

}  // namespace weir::tier::test
