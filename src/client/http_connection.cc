#include "client/http_connection.h"

#include <sys/uio.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "base/assert.h"

namespace weir::client {

std::int64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string format_request_head(std::string_view method, const endpoint& ep, std::string_view stream,
                                std::string_view query, std::string_view content_type, std::size_t body_size,
                                bool with_body) {
  std::string head = fmt::format("{} {}/{}{}{} HTTP/1.1\r\nHost: {}:{}\r\n", method, ep.prefix, stream,
                                 query.empty() ? "" : "?", query, ep.host, ep.port);
  if (!content_type.empty()) head += fmt::format("Content-Type: {}\r\n", content_type);
  if (with_body) head += fmt::format("Content-Length: {}\r\n", body_size);
  head += "\r\n";
  return head;
}

const std::string* http_response::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n.size() == name.size() && std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        })) {
      return &v;
    }
  }
  return nullptr;
}

http_connection::http_connection(io::event_loop& loop, endpoint ep)
    : loop_(&loop), ep_(std::move(ep)), parser_(response_limits()) {}

http::parser_limits http_connection::response_limits() {
  http::parser_limits limits;
  limits.max_body_bytes = UINT64_MAX;  // a catch-up read or an SSE stream may be long
  return limits;
}

http_connection::~http_connection() {
  *alive_ = false;
  close();
}

void http_connection::close() {
  if (sock_) sock_->close();
  state_ = state::closed;
  in_.clear();
}

void http_connection::open_socket() {
  state_ = state::connecting;
  peer_closed_ = false;
  in_.clear();
  auto s = io::tcp_stream::connect(*loop_, ep_.port,
                                   {.on_connected = [this](int err) { on_connected(err); },
                                    .on_readable = [this] { on_readable(); },
                                    .on_writable = [this] { flush_output(); },
                                    .on_hangup = [this] { on_hangup(); }},
                                   ep_.host);
  if (!s) {
    // Report on the loop, not from inside the caller's request(): callbacks never re-enter the caller.
    auto alive = alive_;
    const int err = errno != 0 ? errno : ECONNREFUSED;
    loop_->add_timer(std::chrono::milliseconds(0), [this, alive, err] {
      if (*alive && state_ == state::connecting) on_connected(err);
    });
    return;
  }
  sock_ = std::move(*s);
}

void http_connection::connect(std::function<void(bool, std::string_view)> done) {
  WEIR_ASSERT(!busy(), "connect() on a busy connection to {}", ep_.url);
  connect_done_ = std::move(done);
  if (state_ == state::idle) {
    auto cb = std::move(connect_done_);
    connect_done_ = nullptr;
    cb(true, {});
    return;
  }
  // A bare connect is an exchange too: expire_if_older measures it from now, not from the last request.
  resp_.sent_ns = mono_ns();
  open_socket();
}

void http_connection::on_connected(int err) {
  if (err != 0) {
    fail(fmt::format("connect: {}", std::strerror(err)));
    return;
  }
  if (connect_done_) {
    state_ = state::idle;
    auto cb = std::move(connect_done_);
    connect_done_ = nullptr;
    cb(true, {});
    return;
  }
  // A request was waiting for the connection.
  state_ = state::writing;
  resp_.sent_ns = mono_ns();
  flush_output();
}

void http_connection::request(std::string_view head, std::string_view body, bool keep_body, done_fn done) {
  WEIR_ASSERT(!busy(), "request() on a busy connection to {}", ep_.url);
  streaming_ = false;
  keep_body_ = keep_body;
  done_ = std::move(done);
  start(head, body);
}

void http_connection::stream(std::string_view head, stream_handlers handlers) {
  WEIR_ASSERT(!busy(), "stream() on a busy connection to {}", ep_.url);
  streaming_ = true;
  keep_body_ = false;
  stream_ = std::move(handlers);
  start(head, {});
}

void http_connection::start(std::string_view head, std::string_view body) {
  out_head_ = head;
  out_body_ = body;
  out_written_ = 0;
  resp_ = http_response{};
  resp_.sent_ns = mono_ns();
  parser_.reset(head.rfind("HEAD ", 0) == 0 ? http::method::head : http::method::get);
  if (state_ == state::closed) {
    open_socket();
    return;
  }
  state_ = state::writing;
  flush_output();
}

void http_connection::flush_output() {
  if (state_ != state::writing) return;
  while (true) {
    iovec iov[2];
    int n = 0;
    const std::size_t total = out_head_.size() + out_body_.size();
    if (out_written_ >= total) break;
    if (out_written_ < out_head_.size()) {
      iov[n++] = {const_cast<char*>(out_head_.data() + out_written_), out_head_.size() - out_written_};
      if (!out_body_.empty()) iov[n++] = {const_cast<char*>(out_body_.data()), out_body_.size()};
    } else {
      const std::size_t off = out_written_ - out_head_.size();
      iov[n++] = {const_cast<char*>(out_body_.data() + off), out_body_.size() - off};
    }
    const auto w = sock_->writev(iov, n);
    if (w == io::tcp_stream::would_block) return;  // on_writable calls us again
    if (w < 0) {
      fail(fmt::format("write: {}", std::strerror(errno)));
      return;
    }
    out_written_ += static_cast<std::size_t>(w);
  }
  state_ = state::reading_head;
  // A fast server may already have answered while we were blocked on output.
  if (!in_.empty()) process_input();
}

void http_connection::on_readable() {
  auto alive = alive_;
  while (sock_ && sock_->open()) {
    char* p = in_.prepare(64 * 1024);
    const std::size_t room = in_.writable();
    const auto n = sock_->read(p, room);
    if (n == io::tcp_stream::would_block) return;
    if (n < 0) {
      if (busy()) {
        fail(fmt::format("read: {}", std::strerror(errno)));
      } else {
        close();
      }
      return;
    }
    if (n == 0) {
      peer_closed_ = true;
      if (state_ == state::reading_body && parser_.head().framing == http::response_framing::until_close) {
        finish(false);  // RFC 9112 6.3 item 8: the body ends with the connection
      } else if (busy()) {
        fail(state_ == state::reading_head && resp_.status == 0 ? "connection closed before a response"
                                                                : "connection closed mid-response");
      } else {
        close();  // an idle keep-alive connection the server let go; the next request reconnects
      }
      return;
    }
    in_.commit(static_cast<std::size_t>(n));
    bytes_read_ += static_cast<std::size_t>(n);
    if (state_ == state::reading_head || state_ == state::reading_body) {
      if (!process_input() || !*alive) return;
    } else if (state_ == state::idle || state_ == state::writing) {
      if (state_ == state::idle) {
        close();  // bytes nobody asked for: the connection is out of step
        return;
      }
    }
    // Edge-triggered: a short read drained the socket, and new data (or a close) raises a new edge,
    // so the read that would only say EAGAIN is skipped (one system call less per response).
    if (static_cast<std::size_t>(n) < room) return;
  }
}

void http_connection::on_hangup() {
  if (sock_ && sock_->open()) on_readable();
  if (sock_ && sock_->open() && !busy()) close();
}

bool http_connection::process_input() {
  auto alive = alive_;
  while (state_ == state::reading_head || state_ == state::reading_body) {
    const auto step = parser_.next(in_.view());
    if (step.status == http::parse_status::error) {
      fail(fmt::format("malformed response: {}", step.reason));
      return false;
    }
    if (state_ == state::reading_head) {
      if (!parser_.head_complete()) return true;  // need more
      // The call that completes the head consumes only the head: its views are valid until consume().
      const auto& head = parser_.head();
      if (head.status < 200) {  // 1xx interim response: the real one follows (RFC 9110 15.2)
        in_.consume(step.consumed);
        parser_.reset(http::method::get);
        continue;
      }
      resp_.status = head.status;
      if (const auto* h = head.find("stream-next-offset")) resp_.next_offset.assign(h->value);
      if (keep_headers_) {
        for (std::size_t i = 0; i < head.header_count; ++i) {
          resp_.headers.emplace_back(head.headers[i].name, head.headers[i].value);
        }
      }
      keep_alive_ = head.keep_alive;
      in_.consume(step.consumed);
      state_ = state::reading_body;
      if (streaming_ && stream_.on_head) {
        stream_.on_head(resp_);
        if (!*alive || state_ == state::closed) return false;
      }
    } else {
      if (!step.body.empty()) {
        resp_.body_bytes += step.body.size();
        if (streaming_) {
          // The callback may close the connection (which clears the buffer): stop at once if it does.
          if (stream_.on_data) stream_.on_data(step.body);
          if (!*alive || state_ == state::closed) return false;
        } else if (keep_body_) {
          resp_.body.append(step.body);
        } else if (resp_.status >= 400 && resp_.body.size() < max_error_text) {
          // An error's text is kept (its start) even when the body was not asked for: it says why.
          resp_.body.append(step.body.substr(0, max_error_text - resp_.body.size()));
        }
      }
      in_.consume(step.consumed);
    }
    if (step.status == http::parse_status::complete) {
      finish(true);
      return *alive && state_ != state::closed;
    }
    if (step.consumed == 0) return true;  // need more bytes
  }
  return true;
}

void http_connection::finish(bool reuse) {
  resp_.done_ns = mono_ns();
  if (reuse && keep_alive_ && !peer_closed_ && in_.empty()) {
    state_ = state::idle;
  } else {
    close();
  }
  complete();
}

void http_connection::fail(std::string reason) {
  close();
  resp_.error = std::move(reason);
  resp_.done_ns = mono_ns();
  if (connect_done_) {  // a connect() without a request
    auto cb = std::move(connect_done_);
    connect_done_ = nullptr;
    cb(false, resp_.error);
    return;
  }
  complete();
}

void http_connection::complete() {
  // The callback gets its own copy: it may start the next exchange on this connection at once.
  http_response r = std::move(resp_);
  resp_ = http_response{};
  if (streaming_) {
    auto cb = std::move(stream_.on_end);
    stream_ = {};
    if (cb) cb(r);
  } else {
    auto cb = std::move(done_);
    done_ = nullptr;
    if (cb) cb(r);
  }
}

void http_connection::expire_if_older(std::int64_t started_before_ns) {
  if (busy() && resp_.sent_ns < started_before_ns) fail("timeout");
}

}  // namespace weir::client
