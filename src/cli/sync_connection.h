// sync_connection: a blocking face on client::http_connection (the HTTP client `weir bench` uses) for a
// command-line tool. The connection and its io::event_loop run on a thread of their own; the calling
// thread waits for each exchange. Keep-alive is kept across exchanges (one TCP connection for all the
// appends of `append --lines`, while the server keeps it open).
//
// One caller thread; the callbacks of stream() run on the connection's thread while the caller waits.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "client/endpoint.h"
#include "client/http_connection.h"
#include "io/event_loop.h"

namespace weir::cli {

class sync_connection {
 public:
  explicit sync_connection(client::endpoint server);
  ~sync_connection();
  sync_connection(const sync_connection&) = delete;
  sync_connection& operator=(const sync_connection&) = delete;

  // Sends one request and waits for the whole response, headers and body kept. A transport failure, or
  // no complete response within `timeout_ms`, comes back as http_response::error.
  client::http_response request(const std::string& head, std::string_view body, unsigned timeout_ms);

  struct stream_handlers {
    // Status and headers known; false ends the exchange (the connection is closed).
    std::function<bool(const client::http_response& head)> on_head;
    // Body bytes as they arrive; false ends the exchange (the connection is closed).
    std::function<bool(std::string_view data)> on_data;
  };
  // Sends a GET whose body may never end (SSE) and waits until it ends, fails, or a handler returns false.
  // A response head must arrive within `head_timeout_ms`, and then some bytes at least every
  // `idle_timeout_ms` (an SSE server sends keep-alive comments), or the exchange fails with "timeout": a
  // peer that vanished without closing the connection is noticed. The result has the status (0: none
  // arrived) and an error when the exchange failed (not when a handler ended it).
  client::http_response stream(const std::string& head, stream_handlers handlers, unsigned head_timeout_ms,
                               unsigned idle_timeout_ms);

 private:
  // Runs `fn` on the connection's thread and waits until it calls `done`.
  client::http_response run(std::function<void(std::function<void(client::http_response)> done)> fn);

  io::event_loop loop_;
  std::unique_ptr<client::http_connection> conn_;
  std::thread thread_;
};

}  // namespace weir::cli
