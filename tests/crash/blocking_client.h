// blocking_client: a small blocking HTTP/1.1 client on a plain socket, for the crash-test driver only
// (one request at a time, keep-alive, every read and write bounded by a socket timeout). It is a test
// tool, not the benchmark: `weir bench` has the event-loop client. Responses are parsed by weir's own
// http::response_parser (Content-Length, chunked or until close, RFC 9112 6.3).
//
// Any transport failure (refused, reset, EOF mid-response, timeout) comes back as `error` and closes
// the connection: for the crash test that is "the server may or may not have applied the request".
// One client per thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/response_parser.h"

namespace weir::crash_test {

struct http_reply {
  int status = 0;     // 0 when no complete response arrived
  std::string error;  // empty when a complete response arrived
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  bool ok() const { return error.empty(); }
  // Value of the first header with this name (ASCII case-insensitive), or "".
  std::string header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (n.size() == name.size() && ::strncasecmp(n.data(), name.data(), n.size()) == 0) return v;
    }
    return {};
  }
  bool has_header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (n.size() == name.size() && ::strncasecmp(n.data(), name.data(), n.size()) == 0) return true;
    }
    return false;
  }
  // PROTOCOL.md 4.1: the value `true` compares case-insensitively.
  bool closed() const { return ::strcasecmp(header("Stream-Closed").c_str(), "true") == 0; }
  bool up_to_date() const { return ::strcasecmp(header("Stream-Up-To-Date").c_str(), "true") == 0; }
  std::string next_offset() const { return header("Stream-Next-Offset"); }
};

using header_list = std::vector<std::pair<std::string, std::string>>;

class blocking_client {
 public:
  explicit blocking_client(std::uint16_t port, int timeout_ms = 20'000)
      : port_(port), timeout_ms_(timeout_ms) {}
  ~blocking_client() { close(); }
  blocking_client(const blocking_client&) = delete;
  blocking_client& operator=(const blocking_client&) = delete;

  http_reply request(std::string_view method, std::string_view target, const header_list& headers = {},
                     std::string_view body = {}) {
    http_reply r;
    if (fd_ < 0 && !connect(r)) return r;
    std::string out;
    out.reserve(256 + body.size());
    out.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1:");
    out.append(std::to_string(port_)).append("\r\n");
    for (const auto& [n, v] : headers) out.append(n).append(": ").append(v).append("\r\n");
    if (!body.empty() || method == "POST" || method == "PUT") {
      out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
    }
    out.append("\r\n").append(body);
    if (!send_all(out, r)) return r;
    read_response(method == "HEAD" ? http::method::head : http::method::get, r);
    return r;
  }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buf_.clear();
  }

 private:
  bool fail(http_reply& r, std::string what) {
    r.error = std::move(what);
    if (errno != 0) r.error += std::string(": ") + std::strerror(errno);
    close();
    return false;
  }

  bool connect(http_reply& r) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return fail(r, "socket");
    timeval tv{timeout_ms_ / 1000, (timeout_ms_ % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    errno = 0;
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return fail(r, "connect");
    return true;
  }

  bool send_all(std::string_view data, http_reply& r) {
    while (!data.empty()) {
      errno = 0;
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail(r, "send");
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  void read_response(http::method m, http_reply& r) {
    http::parser_limits limits;
    limits.max_body_bytes = 1ull << 30;
    http::response_parser p(limits);
    p.reset(m);
    bool head_copied = false;
    for (;;) {
      auto s = p.next(buf_);
      if (!head_copied && p.head_complete()) {  // head() views point into buf_ until the erase below
        head_copied = true;
        const auto& h = p.head();
        r.status = h.status;
        for (std::size_t i = 0; i < h.header_count; ++i) {
          r.headers.emplace_back(std::string(h.headers[i].name), std::string(h.headers[i].value));
        }
        keep_alive_ = h.keep_alive;
      }
      r.body.append(s.body);
      buf_.erase(0, s.consumed);
      if (s.status == http::parse_status::complete) break;
      if (s.status == http::parse_status::error) {
        errno = 0;
        fail(r, "malformed response: " + std::string(s.reason));
        r.status = 0;
        return;
      }
      if (s.consumed != 0) continue;
      char chunk[64 * 1024];
      errno = 0;
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        fail(r, errno == EAGAIN || errno == EWOULDBLOCK ? "timeout" : "recv");
        r.status = 0;
        return;
      }
      if (n == 0) {
        s = p.finish();
        r.body.append(s.body);
        if (s.status != http::parse_status::complete) {
          errno = 0;
          fail(r, "connection closed before the response ended");
          r.status = 0;
          return;
        }
        close();
        break;
      }
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
    if (!keep_alive_) close();
  }

  std::uint16_t port_;
  int timeout_ms_;
  int fd_ = -1;
  bool keep_alive_ = true;
  std::string buf_;
};

}  // namespace weir::crash_test
