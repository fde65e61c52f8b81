// The handler API of the HTTP engine: what the protocol layer (and examples) program against.
//
// CONTRACT (written before the implementation; the implementer may add, not break).
//
// Threading: a connection lives on one core (event_loop). The handler is called on that core with a
// request whose views are valid only during the call, and an `exchange` handle. The handler may answer
// at once (respond()) or later: keep the exchange, hop to another core with event_loop::post(), and
// come back with exchange.loop().post(...) before calling any exchange method. While an exchange is
// unanswered, the connection reads no further pipelined request (responses stay in order).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "http/request_parser.h"

namespace weir::io {
class event_loop;
}

namespace weir::http {

class connection;

// A complete request as handed to a handler. Body is fully buffered (de-chunked) up to the configured
// limit; larger bodies were already answered with 413 by the engine.
struct request {
  const request_head* head = nullptr;
  std::string_view body;

  http::method method() const { return head->method; }
  std::string_view target() const { return head->target; }
  std::string_view path() const { return head->path; }
  std::string_view query() const { return head->query; }
  const header* find(std::string_view name) const { return head->find(name); }
  std::span<const header> headers() const { return {head->headers, head->header_count}; }
};

// A handle to one request/response exchange on a connection. Cheap to copy. Becomes inert (alive() ==
// false, every call a no-op) once the exchange finished or the connection closed. Every method must be
// called on loop(), the connection's core.
class exchange {
 public:
  exchange() = default;
  io::event_loop* loop() const;
  bool alive() const;

  // A complete response. The engine adds Date, Server, Content-Length (unless the handler gave one)
  // and Connection: close when the connection will close. For HEAD no body is sent, but
  // Content-Length still says body.size() unless given. 1xx/204/304 carry no body and no length.
  void respond(int status, std::span<const header> headers, std::string_view body);

  // A streamed response (chunked transfer coding), e.g. Server-Sent Events. write() queues a chunk,
  // flush() sends what is queued, end() writes the last chunk and finishes the exchange.
  void begin_stream(int status, std::span<const header> headers);
  void write(std::string_view data);
  void flush();
  void end();

  // Called at most once, on loop(), if the client goes away (or the connection is closed by a timeout
  // or shutdown) before the exchange finished. Not called after respond()/end().
  // (Implementation: it runs from a task posted when the connection closes, never from inside a call on
  // this exchange, so a caller iterating over its readers is not re-entered.)
  void on_close(std::function<void()> fn);

  // Bytes of this exchange's connection still waiting to be sent (0 once inert). A producer feeding a
  // stream can hold back while it is large; a stream whose backlog passes
  // server_options::max_stream_queue_bytes is closed by the engine.
  std::size_t buffered_bytes() const;

  // Flow control for a producer: calls `fn` once, on loop() from a task, as soon as at most
  // `low_water` bytes of this exchange's output wait to be sent (at once, still from a task, if that is
  // already so). One waiter per exchange (a new call replaces it); dropped without a call when the
  // exchange finishes or the connection closes (on_close tells the latter).
  void on_drain(std::size_t low_water, std::function<void()> fn);

  // A small number the handler attaches to this exchange (what kind of request it is); the engine
  // hands it back in the exchange_record it gives server_options::observer. 0 until set.
  void set_tag(std::uint8_t tag);

  // implementation: a connection slot and generation (implementer's choice)
 private:
  friend class connection;
  friend class h2_session;
  io::event_loop* loop_ = nullptr;
  connection* conn_ = nullptr;
  std::uint64_t generation_ = 0;
  std::int32_t stream_ = 0;  // HTTP/2: the stream id on the connection's h2_session; 0: HTTP/1.1
};

using handler = std::function<void(const request&, exchange)>;

}  // namespace weir::http
