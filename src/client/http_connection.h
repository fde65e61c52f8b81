// http_connection: one keep-alive HTTP/1.1 client connection (of `weir bench` and `weir stream`), on one
// event loop (no thread of its own), one request at a time (no pipelining). Built on io::tcp_stream and
// http::response_parser (Content-Length, chunked coding or connection close, RFC 9112 6.3).
//
// Two kinds of exchange:
//   - request(): the whole response is read; the body is counted, and kept only when asked.
//   - stream(): the body is handed out as it arrives (Server-Sent Events); ends with the body or an error.
// Every outcome reaches the caller exactly once through its callback: a response (any status) or an
// error (connect failure, reset, malformed response, timeout). The caller decides what counts as wrong.
//
// Lives on its loop; every call on that loop's thread. Callbacks may destroy nothing but may start the
// next request on the same connection.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client/endpoint.h"
#include "http/response_parser.h"
#include "io/byte_buffer.h"
#include "io/event_loop.h"
#include "io/tcp_stream.h"

namespace weir::client {

// Monotonic nanoseconds (steady clock): the one clock every latency is measured on.
std::int64_t mono_ns();

inline constexpr std::size_t max_error_text = 160;

struct http_response {
  int status = 0;     // 0 when no response arrived
  std::string error;  // empty when a response arrived
  std::uint64_t body_bytes = 0;
  std::string body;  // when asked for; otherwise, for a status >= 400, its first max_error_text bytes
  std::string next_offset;
  // Every header of the response, when the connection keeps them (set_keep_headers); bench does not.
  std::vector<std::pair<std::string, std::string>> headers;
  std::int64_t sent_ns = 0;  // when the request was handed to the socket
  std::int64_t done_ns = 0;  // when the last byte of the response was read
  bool ok() const { return error.empty(); }
  double latency_ms() const { return static_cast<double>(done_ns - sent_ns) / 1e6; }
  // The first kept header with this name (ASCII case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
};

class http_connection {
 public:
  using done_fn = std::function<void(http_response&)>;
  struct stream_handlers {
    std::function<void(const http_response& head)> on_head;  // status and headers known
    std::function<void(std::string_view data)> on_data;      // de-chunked body bytes
    done_fn on_end;                                          // body ended (ok) or failed (error set)
  };

  http_connection(io::event_loop& loop, endpoint ep);
  ~http_connection();
  http_connection(const http_connection&) = delete;
  http_connection& operator=(const http_connection&) = delete;

  // Opens the TCP connection ahead of the first request (so that connecting is not timed).
  void connect(std::function<void(bool ok, std::string_view error)> done);

  // `head` is a complete request head (see format_request_head); `head` and `body` must stay valid until
  // the callback. Connects first if needed.
  void request(std::string_view head, std::string_view body, bool keep_body, done_fn done);
  void stream(std::string_view head, stream_handlers handlers);

  bool busy() const { return state_ != state::idle && state_ != state::closed; }
  // Fails the exchange in flight with "timeout" (and closes) if it started before `started_before_ns`.
  void expire_if_older(std::int64_t started_before_ns);
  // Closes the socket; an exchange in flight is dropped without its callback (e.g. ending an SSE read).
  void close();

  // Keep every response header in http_response::headers (off by default: bench only needs the offset).
  void set_keep_headers(bool on) { keep_headers_ = on; }

  const endpoint& peer() const { return ep_; }
  std::uint64_t bytes_read() const { return bytes_read_; }

 private:
  enum class state : std::uint8_t { closed, connecting, idle, writing, reading_head, reading_body };

  void start(std::string_view head, std::string_view body);
  void open_socket();
  void on_connected(int err);
  void flush_output();
  void on_readable();
  void on_hangup();
  bool process_input();  // false once the connection failed
  void finish(bool reuse);
  void fail(std::string reason);
  void complete();
  static http::parser_limits response_limits();

  io::event_loop* loop_;
  endpoint ep_;
  std::unique_ptr<io::tcp_stream> sock_;
  state state_ = state::closed;

  // The exchange in flight.
  std::string_view out_head_, out_body_;
  std::size_t out_written_ = 0;
  bool keep_body_ = false;
  bool keep_headers_ = false;
  bool streaming_ = false;
  bool peer_closed_ = false;
  done_fn done_;
  stream_handlers stream_;
  std::function<void(bool, std::string_view)> connect_done_;
  http_response resp_;
  http::response_parser parser_;
  bool keep_alive_ = true;
  io::byte_buffer in_;
  std::uint64_t bytes_read_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// "METHOD <prefix>/<stream><query> HTTP/1.1" plus Host, optional Content-Type and Content-Length.
std::string format_request_head(std::string_view method, const endpoint& ep, std::string_view stream,
                                std::string_view query, std::string_view content_type, std::size_t body_size,
                                bool with_body);

}  // namespace weir::client
