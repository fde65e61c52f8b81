// Helpers for HTTP engine tests over real loopback sockets: a server running on its own thread and a
// small blocking client with receive timeouts (every wait is bounded).
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http/server.h"
#include "io/event_loop.h"
#include "io/socket.h"

namespace weir::http::testing {

// Runs an http::server on a background thread; stops and joins it on destruction.
class running_server {
 public:
  running_server(server_options opts, handler h) : srv_(std::move(opts), std::move(h)) {
    auto st = srv_.start();
    if (!st) ADD_FAILURE() << "start: " << st.err().reason;
    thread_ = std::thread([this] { srv_.run(); });
  }
  ~running_server() { stop_and_join(); }
  void stop_and_join() {
    if (!thread_.joinable()) return;
    srv_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return srv_.port(); }
  http::server& server() { return srv_; }

 private:
  http::server srv_;
  std::thread thread_;
};

inline server_options test_options() {
  server_options o;
  o.port = 0;
  return o;
}

// Polls `pred` every 5 ms for at most `limit`; returns its last value.
inline bool eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

struct response {
  int status = 0;
  std::string head;  // status line + headers
  std::string body;  // de-chunked
  std::string header(const std::string& name) const {
    std::string lower_head;
    for (char c : head) lower_head += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string key = "\r\n";
    for (char c : name) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    key += ":";
    auto p = lower_head.find(key);
    if (p == std::string::npos) return {};
    p += key.size();
    auto e = head.find("\r\n", p);
    std::string v = head.substr(p, e - p);
    while (!v.empty() && v.front() == ' ') v.erase(v.begin());
    return v;
  }
};

// A blocking loopback client. Reads wait at most `timeout` in total per call. Its bytes go through
// send_some/recv_some, which a TLS client (tests/integration/tls) overrides.
class client {
 public:
  explicit client(std::uint16_t port) {
    auto fd = io::connect_tcp("127.0.0.1", port, false);
    if (!fd) {
      ADD_FAILURE() << "connect: " << fd.err().reason;
      return;
    }
    fd_ = *fd;
  }
  virtual ~client() { close(); }
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  int fd() const { return fd_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

  void send(const std::string& s) {
    std::size_t off = 0;
    while (off < s.size()) {
      auto n = send_some(s.data() + off, s.size() - off);
      if (n <= 0) {
        ADD_FAILURE() << "send failed";
        return;
      }
      off += static_cast<std::size_t>(n);
    }
  }

  // Reads whatever arrives within `wait` (or until EOF); appends to the internal buffer.
  // Returns false on EOF.
  bool fill(std::chrono::milliseconds wait = std::chrono::milliseconds(5000)) {
    pollfd p{fd_, POLLIN, 0};
    if (!has_buffered() && ::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return true;
    char buf[65536];
    auto n = recv_some(buf, sizeof buf);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buf_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  // Waits until the buffer holds `needle` (or EOF / timeout).
  bool wait_for(const std::string& needle,
                std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (buf_.find(needle) == std::string::npos) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0 || eof_) return false;
      fill(left);
    }
    return true;
  }

  // True if the server closes the connection within `limit` (pending bytes are kept in the buffer).
  bool wait_closed(std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (!eof_) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      fill(left);
    }
    return true;
  }

  // Reads one complete response (Content-Length, chunked, or no body for HEAD/1xx/204/304, or until
  // EOF when neither is given).
  bool read_response(response& r, bool head_request = false,
                     std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    auto end = std::chrono::steady_clock::now() + limit;
    auto more = [&] {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0 || eof_) return false;
      fill(left);
      return true;
    };
    std::size_t he;
    while ((he = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!more()) return false;
    }
    r = response{};
    r.head = buf_.substr(0, he + 2);
    r.status = std::atoi(r.head.c_str() + 9);
    std::size_t pos = he + 4;
    std::string te = r.header("Transfer-Encoding");
    std::string cl = r.header("Content-Length");
    if (head_request || r.status < 200 || r.status == 204 || r.status == 304) {
      buf_.erase(0, pos);
      return true;
    }
    if (te == "chunked") {
      for (;;) {
        std::size_t le;
        while ((le = buf_.find("\r\n", pos)) == std::string::npos) {
          if (!more()) return false;
        }
        std::size_t size = std::strtoul(buf_.c_str() + pos, nullptr, 16);
        std::size_t data = le + 2;
        while (buf_.size() < data + size + 2) {
          if (!more()) return false;
        }
        r.body.append(buf_, data, size);
        pos = data + size + 2;
        if (size == 0) break;
      }
      buf_.erase(0, pos);
      return true;
    }
    if (!cl.empty()) {
      std::size_t n = std::strtoul(cl.c_str(), nullptr, 10);
      while (buf_.size() < pos + n) {
        if (!more()) return false;
      }
      r.body = buf_.substr(pos, n);
      buf_.erase(0, pos + n);
      return true;
    }
    while (more()) {
    }
    r.body = buf_.substr(pos);
    buf_.clear();
    return eof_;
  }

  std::string& buffer() { return buf_; }
  bool eof() const { return eof_; }

 protected:
  virtual long send_some(const char* p, std::size_t n) { return ::send(fd_, p, n, MSG_NOSIGNAL); }
  // Blocks until something arrives (called after poll() said readable, or when has_buffered()).
  virtual long recv_some(char* p, std::size_t n) { return ::recv(fd_, p, n, 0); }
  // Bytes already received from the socket but not yet returned (TLS records).
  virtual bool has_buffered() const { return false; }

 private:
  int fd_ = -1;
  std::string buf_;
  bool eof_ = false;
};

inline std::string get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

}  // namespace weir::http::testing
