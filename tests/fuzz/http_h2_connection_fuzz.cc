// libFuzzer target: arbitrary bytes after the HTTP/2 connection preface, fed to a real engine
// connection (http::server on a loopback port, in this process) whose handler answers in every way an
// exchange can: at once with a body, streamed (begin_stream/write/end), from a posted task, never
// (until the client goes). Invariants: the engine does not crash (ASan/UBSan) and, once the client has
// sent everything and shut down its side, the connection ends within a bounded time (no stuck
// connection, whatever the frames were). The first input byte picks a few limits, so the
// small-window and small-header-list paths run too.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "http/h2_session.h"
#include "http/server.h"
#include "io/event_loop.h"
#include "io/socket.h"

namespace {

using namespace weir;

#define FUZZ_CHECK(cond)                                                         \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "invariant broken: %s (line %d)\n", #cond, __LINE__); \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

void handle(const http::request& req, http::exchange ex) {
  std::string_view path = req.path();
  static constexpr http::header type[] = {{"Content-Type", "text/plain"}, {"Connection", "close"}};
  if (path.starts_with("/s")) {
    ex.begin_stream(200, type);
    ex.write(req.body);
    ex.write("data: x\n\n");
    ex.flush();
    ex.end();
  } else if (path.starts_with("/p")) {
    std::string body(req.body);
    ex.loop()->post([ex, body]() mutable { ex.respond(201, {}, body); });
  } else if (path.starts_with("/h")) {
    ex.on_close([] {});  // held until the client goes
  } else if (path.starts_with("/l")) {
    ex.respond(200, type, std::string(100000, 'l'));  // more than the default windows
  } else {
    ex.respond(path.size() % 2 ? 204 : 200, type, req.body);
  }
}

struct engine {
  explicit engine(bool small) {
    http::server_options o;
    o.port = 0;
    o.limits.max_body_bytes = 64 * 1024;
    o.write_timeout = std::chrono::milliseconds(500);
    o.drain_timeout = std::chrono::milliseconds(100);
    if (small) {
      o.h2.max_concurrent_streams = 4;
      o.h2.max_header_list_bytes = 512;
      o.h2.stream_window_bytes = 100;
      o.h2.connection_window_bytes = 70000;
      o.max_stream_queue_bytes = 4096;
    }
    srv = std::make_unique<http::server>(std::move(o), handle);
    FUZZ_CHECK(srv->start());
    thread = std::thread([this] { srv->run(); });
  }
  std::unique_ptr<http::server> srv;
  std::thread thread;  // runs until the process exits
};

engine& the_engine(bool small) {
  static engine* normal = new engine(false);
  static engine* tight = new engine(true);
  return small ? *tight : *normal;
}

// Sends everything (waiting for room while draining what the server sends), shuts down the write side,
// then reads until the server closes. False if the server kept the connection open too long.
bool exchange_bytes(std::uint16_t port, std::string_view bytes) {
  auto fd_or = io::connect_tcp("127.0.0.1", port, false);
  FUZZ_CHECK(fd_or);
  int fd = *fd_or;
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::size_t off = 0;
  bool shut = false;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  char sink[65536];
  for (;;) {
    if (std::chrono::steady_clock::now() > end) {
      ::close(fd);
      return false;
    }
    if (off == bytes.size() && !shut) {
      ::shutdown(fd, SHUT_WR);
      shut = true;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (shut ? 0 : POLLOUT)), 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      auto n = ::recv(fd, sink, sizeof sink, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;  // closed (or reset): done
    }
    if (!shut && (p.revents & POLLOUT)) {
      auto n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n > 0) {
        off += static_cast<std::size_t>(n);
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        break;  // the server closed first (a connection error it answered with GOAWAY)
      }
    }
  }
  ::close(fd);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  bool small = (data[0] & 1) != 0;
  std::string bytes(http::h2_preface);
  bytes.append(reinterpret_cast<const char*>(data) + 1, size - 1);
  FUZZ_CHECK(exchange_bytes(the_engine(small).srv->port(), bytes));
  return 0;
}
