#include "io/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstring>

namespace weir::io {
namespace {
error sys_error(const char* what) {
  return make_error(socket_errc::system, std::string(what) + ": " + std::strerror(errno));
}

result<sockaddr_in> make_addr(const std::string& host, std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  const std::string& h = host == "localhost" ? std::string("127.0.0.1") : host;
  if (::inet_pton(AF_INET, h.c_str(), &addr.sin_addr) != 1) {
    return make_error(socket_errc::bad_address, "not an IPv4 address: " + host);
  }
  return addr;
}
}  // namespace

result<host_port> parse_host_port(std::string_view s) {
  auto colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return make_error(socket_errc::bad_address, "expected HOST:PORT, got '" + std::string(s) + "'");
  }
  unsigned port = 0;
  auto digits = s.substr(colon + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty() || port > 65535) {
    return make_error(socket_errc::bad_address, "bad port in '" + std::string(s) + "'");
  }
  return host_port{std::string(s.substr(0, colon)), static_cast<std::uint16_t>(port)};
}

result<int> listen_tcp(const std::string& host, std::uint16_t port, int backlog) {
  auto addr = make_addr(host, port);
  if (!addr) return addr.err();
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error("socket");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
    auto e = sys_error("SO_REUSEPORT");
    ::close(fd);
    return e;
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(sockaddr_in)) != 0) {
    auto e = sys_error("bind");
    ::close(fd);
    return e;
  }
  if (::listen(fd, backlog) != 0) {
    auto e = sys_error("listen");
    ::close(fd);
    return e;
  }
  return fd;
}

result<int> claim_listen_address(const std::string& host, std::uint16_t port) {
  if (port == 0) return -1;
  auto addr = make_addr(host, port);
  if (!addr) return addr.err();
  int claim = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (claim < 0) return sys_error("socket(AF_UNIX)");
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  const std::string name = "weir-listen:" + host + ":" + std::to_string(port);
  // Abstract namespace: sun_path starts with a NUL byte; the length passed says where the name ends.
  std::memcpy(un.sun_path + 1, name.data(), std::min(name.size(), sizeof un.sun_path - 1));
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 +
                                         std::min(name.size(), sizeof un.sun_path - 1));
  if (::bind(claim, reinterpret_cast<const sockaddr*>(&un), len) != 0) {
    int err = errno;
    ::close(claim);
    if (err == EADDRINUSE) {
      return make_error(socket_errc::in_use,
                        host + ":" + std::to_string(port) + " is already served by another weir process");
    }
    errno = err;
    return sys_error("bind(AF_UNIX claim)");
  }
  int probe = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) {
    auto e = sys_error("socket");
    ::close(claim);
    return e;
  }
  int one = 1;
  ::setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // TIME_WAIT leftovers are fine
  int rc = ::bind(probe, reinterpret_cast<const sockaddr*>(&*addr), sizeof(sockaddr_in));
  int err = errno;
  ::close(probe);
  if (rc != 0) {
    ::close(claim);
    if (err == EADDRINUSE) {
      return make_error(socket_errc::in_use,
                        host + ":" + std::to_string(port) + ": address already in use by another process");
    }
    errno = err;
    return sys_error("bind");
  }
  return claim;
}

result<std::uint16_t> local_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return sys_error("getsockname");
  return static_cast<std::uint16_t>(ntohs(addr.sin_port));
}

result<int> connect_tcp(const std::string& host, std::uint16_t port, bool non_blocking) {
  auto addr = make_addr(host, port);
  if (!addr) return addr.err();
  int flags = SOCK_STREAM | SOCK_CLOEXEC | (non_blocking ? SOCK_NONBLOCK : 0);
  int fd = ::socket(AF_INET, flags, 0);
  if (fd < 0) return sys_error("socket");
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(sockaddr_in)) != 0 &&
      !(non_blocking && errno == EINPROGRESS)) {
    auto e = sys_error("connect");
    ::close(fd);
    return e;
  }
  set_nodelay(fd);
  return fd;
}

int socket_error(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace weir::io
