#include "crash/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "crash/blocking_client.h"

namespace weir::crash_test {

namespace fs = std::filesystem;

std::uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool serve_supports_flag(const std::string& binary, const std::string& flag) {
  const std::string cmd = "'" + binary + "' serve --help 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out.find(flag) != std::string::npos;
}

server_process::server_process(std::string binary, fs::path data_dir, std::vector<std::string> args,
                               fs::path log)
    : binary_(std::move(binary)),
      data_dir_(std::move(data_dir)),
      args_(std::move(args)),
      log_(std::move(log)) {}

server_process::~server_process() {
  std::string ignored;
  if (pid_ > 0) kill(ignored);
}

void server_process::start(const std::string& note, std::uint16_t port) {
  port_ = port != 0 ? port : free_loopback_port();
  {
    std::ofstream(log_, std::ios::app) << "\n===== crash test: " << note << " (port " << port_ << ") =====\n";
  }
  std::vector<std::string> argv_s = {
      binary_, "serve", "--listen", "127.0.0.1:" + std::to_string(port_), "--data-dir", data_dir_.string()};
  argv_s.insert(argv_s.end(), args_.begin(), args_.end());
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    // The server must not outlive a crashing test driver.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
}

bool server_process::alive(std::string& why) {
  if (pid_ <= 0) {
    why = "not started";
    return false;
  }
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) {
    why = WIFEXITED(st) ? "exited with code " + std::to_string(WEXITSTATUS(st))
                        : "killed by signal " + std::to_string(WTERMSIG(st));
    pid_ = -1;
    return false;
  }
  return true;
}

bool server_process::wait_ready(std::chrono::milliseconds limit, std::string& why) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (!alive(why)) {
      why = "weir serve " + why + " during start-up";
      return false;
    }
    blocking_client c(port_, 1000);
    if (c.request("GET", "/").ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  why = "weir serve did not answer on port " + std::to_string(port_) + " within " +
        std::to_string(limit.count()) + " ms";
  return false;
}

bool server_process::kill(std::string& why) {
  if (!alive(why)) return false;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
  return true;
}

std::string server_process::log_tail(std::size_t bytes) const {
  std::ifstream in(log_, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? "..." + s.substr(s.size() - bytes) : s;
}

}  // namespace weir::crash_test
