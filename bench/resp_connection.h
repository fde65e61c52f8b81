// resp_connection: one client connection to a Redis server speaking RESP2, for the saturation
// workload's Redis target (XADD, the Redis Streams counterpart of a Durable Streams append). One
// command at a time (no pipelining, like http_connection), on one event loop, no thread of its own.
//
// Every command's outcome reaches its callback exactly once: a reply (status 200, or 500 for an error
// reply "-ERR ...") or a transport failure (status 0, error set: connect, reset, timeout, malformed).
// After a failure the connection is closed; the next command reconnects.
//
// Lives on its loop; every call on that loop's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "client/endpoint.h"
#include "io/event_loop.h"
#include "io/tcp_stream.h"

namespace weir::bench {

struct resp_reply {
  int status = 0;     // 200: a reply; 500: an error reply; 0: none arrived (error says why)
  std::string error;  // transport failure, or the error reply's text
  std::int64_t sent_ns = 0;
  std::int64_t done_ns = 0;
  bool ok() const { return status != 0; }
};

// "*N\r\n$len\r\narg\r\n...": a command as RESP2 multi-bulk.
std::string resp_command(std::initializer_list<std::string_view> args);

// The length of the complete reply at the front of `in` (simple string, error, integer, bulk string or
// nil), 0 if it is not all there yet, or -1 if it is not RESP2 this client understands (arrays are not
// needed by XADD and DEL). `is_error`: the reply is "-...".
std::ptrdiff_t resp_reply_length(std::string_view in, bool& is_error);

class resp_connection {
 public:
  using done_fn = std::function<void(resp_reply&)>;
  resp_connection(io::event_loop& loop, client::endpoint ep);
  ~resp_connection();
  resp_connection(const resp_connection&) = delete;
  resp_connection& operator=(const resp_connection&) = delete;

  void connect(std::function<void(bool ok)> done);
  // `command` must stay valid until the callback (resp_command's bytes).
  void send(std::string_view command, done_fn done);
  bool busy() const { return done_ != nullptr; }
  void expire_if_older(std::int64_t started_before_ns);
  void close();

 private:
  void open_socket();
  void flush();
  void on_readable();
  void fail(std::string reason);

  io::event_loop* loop_;
  client::endpoint ep_;
  std::unique_ptr<io::tcp_stream> sock_;
  bool connected_ = false;
  std::function<void(bool)> connect_done_;
  std::string_view out_;
  std::size_t written_ = 0;
  std::string in_;
  done_fn done_;
  resp_reply reply_;
};

}  // namespace weir::bench
