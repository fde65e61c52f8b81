// A blocking HTTP/2 test client over a loopback socket, built on nghttp2's client session (the peer the
// h2 tests talk to), plus raw frame writers for the tests that must break the protocol on purpose.
// Every wait is bounded. One thread (the test's).
#pragma once

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/socket.h"

namespace weir::http::testing {

struct h2_response {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool closed = false;
  std::uint32_t error_code = 0;  // of RST_STREAM / stream close
  std::string header(const std::string& name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return v;
    }
    return {};
  }
};

class h2_client {
 public:
  // settings: what the client announces (e.g. a zero initial window).
  explicit h2_client(std::uint16_t port, std::vector<nghttp2_settings_entry> settings = {}) {
    auto fd = io::connect_tcp("127.0.0.1", port, false);
    if (!fd) {
      ADD_FAILURE() << "connect: " << fd.err().reason;
      return;
    }
    fd_ = *fd;
    own_fd_ = true;
    start(settings);
  }
  // Over an established TLS session (h2 after ALPN); the socket and the session stay the caller's.
  h2_client(int fd, SSL* ssl, std::vector<nghttp2_settings_entry> settings = {}) : fd_(fd), ssl_(ssl) {
    start(settings);
  }
  ~h2_client() {
    if (session_ != nullptr) nghttp2_session_del(session_);
    if (own_fd_ && fd_ >= 0) ::close(fd_);
  }
  h2_client(const h2_client&) = delete;
  h2_client& operator=(const h2_client&) = delete;

 private:
  void start(std::vector<nghttp2_settings_entry>& settings) {
    nghttp2_session_callbacks* cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_send_callback(
        cbs, [](nghttp2_session*, const std::uint8_t* d, std::size_t n, int, void* u) -> ssize_t {
          static_cast<h2_client*>(u)->raw(std::string(reinterpret_cast<const char*>(d), n));
          return static_cast<ssize_t>(n);
        });
    nghttp2_session_callbacks_set_on_header_callback(
        cbs,
        [](nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* n, std::size_t nl,
           const std::uint8_t* v, std::size_t vl, std::uint8_t, void* u) -> int {
          auto& r = static_cast<h2_client*>(u)->responses_[f->hd.stream_id];
          std::string name(reinterpret_cast<const char*>(n), nl), value(reinterpret_cast<const char*>(v), vl);
          if (name == ":status") {
            int st = std::stoi(value);
            if (st >= 200) r.status = st;  // a 100 Continue is not the answer
          } else {
            r.headers.emplace_back(name, value);
          }
          return 0;
        });
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
        cbs,
        [](nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* d, std::size_t n,
           void* u) -> int {
          static_cast<h2_client*>(u)->responses_[id].body.append(reinterpret_cast<const char*>(d), n);
          return 0;
        });
    nghttp2_session_callbacks_set_on_stream_close_callback(
        cbs, [](nghttp2_session*, std::int32_t id, std::uint32_t code, void* u) -> int {
          auto& r = static_cast<h2_client*>(u)->responses_[id];
          r.closed = true;
          r.error_code = code;
          return 0;
        });
    nghttp2_session_callbacks_set_on_frame_recv_callback(
        cbs, [](nghttp2_session*, const nghttp2_frame* f, void* u) -> int {
          auto* c = static_cast<h2_client*>(u);
          if (f->hd.type == NGHTTP2_GOAWAY) {
            c->goaway_ = true;
            c->goaway_code_ = f->goaway.error_code;
          }
          if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK)) {
            c->server_settings_ = true;
          }
          return 0;
        });
    nghttp2_session_client_new(&session_, cbs, this);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
  }

 public:
  nghttp2_session* session() { return session_; }
  int fd() const { return fd_; }

  // A request; the body (if any) is sent with flow control by nghttp2. with_body and an empty body: the
  // request announces a body and never sends it.
  std::int32_t request(const std::string& method, const std::string& path,
                       std::vector<std::pair<std::string, std::string>> extra = {}, std::string body = {},
                       bool with_body = false) {
    std::vector<std::pair<std::string, std::string>> fields = {
        {":method", method}, {":scheme", "http"}, {":authority", "127.0.0.1"}, {":path", path}};
    for (auto& f : extra) fields.push_back(std::move(f));
    return request_fields(std::move(fields), std::move(body), with_body);
  }

  // A request of exactly these fields, in this order (pseudo-header fields included: the tests of
  // malformed requests leave some out or misplace them).
  std::int32_t request_fields(std::vector<std::pair<std::string, std::string>> fields, std::string body = {},
                              bool with_body = false) {
    std::vector<nghttp2_nv> nva;
    for (auto& [n, v] : fields) {
      nva.push_back({reinterpret_cast<std::uint8_t*>(n.data()), reinterpret_cast<std::uint8_t*>(v.data()),
                     n.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
    }
    nghttp2_data_provider provider{};
    bodies_.push_back(std::make_unique<body_source>(body_source{std::move(body), 0}));
    provider.source.ptr = bodies_.back().get();
    provider.read_callback = [](nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t len,
                                std::uint32_t* flags, nghttp2_data_source* src, void*) -> ssize_t {
      auto* b = static_cast<body_source*>(src->ptr);
      if (b->data.empty()) return NGHTTP2_ERR_DEFERRED;  // with_body and no bytes: a body that never comes
      std::size_t n = std::min(len, b->data.size() - b->pos);
      std::memcpy(buf, b->data.data() + b->pos, n);
      b->pos += n;
      if (b->pos == b->data.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
      return static_cast<ssize_t>(n);
    };
    bool send_body = with_body || !bodies_.back()->data.empty();
    std::int32_t id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(),
                                             send_body ? &provider : nullptr, nullptr);
    EXPECT_GT(id, 0);
    responses_[id];
    return id;
  }

  // Sends what nghttp2 has queued and reads what arrives until `done()` or `limit` passes.
  bool run_until(const std::function<bool()>& done,
                 std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      if (nghttp2_session_send(session_) != 0) return done();
      if (done()) return true;
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0 || eof_) return done();
      pollfd p{fd_, POLLIN, 0};
      bool pending = ssl_ != nullptr && SSL_pending(ssl_) > 0;
      if (!pending && ::poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 50))) <= 0) continue;
      char buf[65536];
      long n;
      if (ssl_ != nullptr) {
        n = SSL_read(ssl_, buf, sizeof buf);
        ERR_clear_error();
      } else {
        n = ::recv(fd_, buf, sizeof buf, 0);
      }
      if (n <= 0) {
        eof_ = true;
        continue;
      }
      bytes_in_ += static_cast<std::size_t>(n);
      if (!paused_ && nghttp2_session_mem_recv(session_, reinterpret_cast<std::uint8_t*>(buf),
                                               static_cast<std::size_t>(n)) < 0) {
        eof_ = true;
      }
    }
  }
  bool wait_closed(std::int32_t id) {
    return run_until([&] { return responses_[id].closed; });
  }
  // Raw bytes straight onto the socket (frames built by hand).
  void raw(const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      long n = ssl_ != nullptr ? SSL_write(ssl_, bytes.data() + off, static_cast<int>(bytes.size() - off))
                               : ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) {
        send_failed_ = true;
        return;
      }
      off += static_cast<std::size_t>(n);
    }
  }
  // Waits for the server to close the connection (EOF) within `limit`, parsing what it sends before.
  bool wait_eof(std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    return run_until([&] { return eof_; }, limit);
  }

  h2_response& response(std::int32_t id) { return responses_[id]; }
  bool goaway() const { return goaway_; }
  std::uint32_t goaway_code() const { return goaway_code_; }
  bool eof() const { return eof_; }
  bool server_settings() const { return server_settings_; }
  std::size_t bytes_in() const { return bytes_in_; }
  // Read bytes but do not process them (a client that stalls above the socket).
  void pause(bool p) { paused_ = p; }

 private:
  struct body_source {
    std::string data;
    std::size_t pos = 0;
  };
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  bool own_fd_ = false;
  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, h2_response> responses_;
  std::vector<std::unique_ptr<body_source>> bodies_;
  bool goaway_ = false;
  std::uint32_t goaway_code_ = 0;
  bool eof_ = false;
  bool send_failed_ = false;
  bool server_settings_ = false;
  bool paused_ = false;
  std::size_t bytes_in_ = 0;
};

// A frame header (RFC 9113 4.1) followed by its payload.
inline std::string h2_frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                            const std::string& payload) {
  std::string f;
  auto len = static_cast<std::uint32_t>(payload.size());
  f += static_cast<char>(len >> 16);
  f += static_cast<char>(len >> 8);
  f += static_cast<char>(len);
  f += static_cast<char>(type);
  f += static_cast<char>(flags);
  f += static_cast<char>((stream >> 24) & 0x7f);
  f += static_cast<char>(stream >> 16);
  f += static_cast<char>(stream >> 8);
  f += static_cast<char>(stream);
  return f + payload;
}

}  // namespace weir::http::testing
