#include "bench/resp_connection.h"

#include <charconv>

#include "client/http_connection.h"

namespace weir::bench {

std::string resp_command(std::initializer_list<std::string_view> args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (std::string_view a : args) {
    out += "$" + std::to_string(a.size()) + "\r\n";
    out += a;
    out += "\r\n";
  }
  return out;
}

std::ptrdiff_t resp_reply_length(std::string_view in, bool& is_error) {
  if (in.empty()) return 0;
  const auto eol = in.find("\r\n");
  if (eol == std::string_view::npos) return 0;
  is_error = in[0] == '-';
  switch (in[0]) {
    case '+':
    case '-':
    case ':':
      return static_cast<std::ptrdiff_t>(eol + 2);
    case '$': {
      long long len = 0;
      auto [p, ec] = std::from_chars(in.data() + 1, in.data() + eol, len);
      if (ec != std::errc{} || p != in.data() + eol || len < -1) return -1;
      if (len == -1) return static_cast<std::ptrdiff_t>(eol + 2);  // nil
      const std::size_t total = eol + 2 + static_cast<std::size_t>(len) + 2;
      return in.size() >= total ? static_cast<std::ptrdiff_t>(total) : 0;
    }
    default:
      return -1;
  }
}

resp_connection::resp_connection(io::event_loop& loop, client::endpoint ep)
    : loop_(&loop), ep_(std::move(ep)) {}

resp_connection::~resp_connection() {
  close();
}

void resp_connection::open_socket() {
  auto s = io::tcp_stream::connect(*loop_, ep_.port,
                                   {.on_connected =
                                        [this](int err) {
                                          connected_ = err == 0;
                                          if (connect_done_) {
                                            auto done = std::move(connect_done_);
                                            connect_done_ = nullptr;
                                            done(connected_);
                                          }
                                          if (!connected_) {
                                            fail("connect");
                                          } else if (done_) {
                                            flush();
                                          }
                                        },
                                    .on_readable = [this] { on_readable(); },
                                    .on_writable = [this] { flush(); },
                                    .on_hangup = [this] { on_readable(); }},
                                   ep_.host);
  if (!s) {
    connected_ = false;
    if (connect_done_) {
      auto done = std::move(connect_done_);
      connect_done_ = nullptr;
      done(false);
    }
    return;
  }
  sock_ = std::move(*s);
}

void resp_connection::connect(std::function<void(bool)> done) {
  connect_done_ = std::move(done);
  open_socket();
}

void resp_connection::send(std::string_view command, done_fn done) {
  done_ = std::move(done);
  reply_ = resp_reply{};
  reply_.sent_ns = client::mono_ns();
  out_ = command;
  written_ = 0;
  in_.clear();
  if (!sock_ || !sock_->open()) {
    connected_ = false;
    open_socket();
    if (!sock_ || !sock_->open()) {
      fail("connect");
      return;
    }
  }
  if (connected_) flush();
}

void resp_connection::flush() {
  if (!sock_ || !done_) return;
  while (written_ < out_.size()) {
    const auto n = sock_->write(out_.substr(written_));
    if (n == io::tcp_stream::would_block) return;
    if (n < 0) {
      fail("transport: write");
      return;
    }
    written_ += static_cast<std::size_t>(n);
  }
}

void resp_connection::on_readable() {
  if (!sock_) return;
  char buf[16384];
  for (;;) {
    const auto n = sock_->read(buf, sizeof buf);
    if (n == io::tcp_stream::would_block) break;
    if (n <= 0) {
      fail(n == 0 ? "transport: closed" : "transport: read");
      return;
    }
    in_.append(buf, static_cast<std::size_t>(n));
    if (static_cast<std::size_t>(n) < sizeof buf) break;
  }
  if (!done_) return;
  bool is_error = false;
  const auto len = resp_reply_length(in_, is_error);
  if (len < 0) {
    fail("malformed reply");
    return;
  }
  if (len == 0) return;
  reply_.done_ns = client::mono_ns();
  reply_.status = is_error ? 500 : 200;
  if (is_error) reply_.error = in_.substr(1, static_cast<std::size_t>(len) - 3);
  in_.erase(0, static_cast<std::size_t>(len));
  auto done = std::move(done_);
  done_ = nullptr;
  done(reply_);
}

void resp_connection::fail(std::string reason) {
  if (sock_) sock_->close();
  sock_.reset();
  connected_ = false;
  if (!done_) return;
  reply_.status = 0;
  reply_.error = std::move(reason);
  reply_.done_ns = client::mono_ns();
  auto done = std::move(done_);
  done_ = nullptr;
  done(reply_);
}

void resp_connection::expire_if_older(std::int64_t started_before_ns) {
  if (done_ && reply_.sent_ns < started_before_ns) fail("timeout");
}

void resp_connection::close() {
  if (sock_) sock_->close();
  sock_.reset();
  connected_ = false;
  done_ = nullptr;
}

}  // namespace weir::bench
