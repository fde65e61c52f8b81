// server: the HTTP/1.1 engine. One event loop per core, each with its own SO_REUSEPORT listener.
//
// CONTRACT (written before the implementation; the implementer may add, not break).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "http/exchange.h"
#include "io/transport.h"

namespace weir::io {
class event_loop;
class tls_context;
}  // namespace weir::io

namespace weir::http {

// Which HTTP version served an exchange (an access log writes it as HTTP/1.1, HTTP/1.0 or HTTP/2).
enum class http_protocol : std::uint8_t { http1_1, http1_0, h2 };

// What the engine reports of one finished exchange (server_options::observer).
struct exchange_record {
  std::uint8_t tag = 0;  // exchange::set_tag; 0 for an error the engine answered itself (400, 408, 413...)
  int status = 0;        // 0: the connection closed before a response began
  std::uint64_t bytes_in = 0;   // request head and body as received (0 for the engine's own errors)
  std::uint64_t bytes_out = 0;  // response head and body as queued (chunk framing included)
  // Steady-clock nanoseconds from the read that completed the request (pipelined requests of one read
  // share it) to the response head, and to the end of the response (they differ for streamed ones).
  std::uint64_t head_ns = 0;
  std::uint64_t total_ns = 0;
  std::uint32_t client = 0;  // the peer's IPv4 address in host order; 0 for IPv6
  // Only when the observer asked for them (wants_request_line); never the query string.
  std::string_view method;
  std::string_view path;
  http_protocol protocol = http_protocol::http1_1;  // h2: h2 or h2c
};

// Told of every exchange as it finishes (response complete, or connection closed first), on the
// connection's core, which passes its loop index. Must not call back into the exchange.
class exchange_observer {
 public:
  virtual ~exchange_observer() = default;
  virtual void finished(unsigned core, const exchange_record& r) = 0;
  // Copy the method and the path of each request (an access log needs them; counters do not).
  bool wants_request_line = false;
};

// HTTP/2 (docs/http2.md): h2c with prior knowledge on the HTTP/1.1 port (the connection preface tells
// them apart), and h2 through ALPN with `tls`. Limits apply per connection; request bodies and streamed
// responses keep the engine's budgets (body_budget_bytes, max_body_bytes, max_stream_queue_bytes) per
// stream.
struct h2_options {
  bool enabled = true;
  // SETTINGS_MAX_CONCURRENT_STREAMS: requests (live tails included) one connection may have open.
  std::uint32_t max_concurrent_streams = 256;
  // SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113 6.5.2: names + values + 32 per field); over it: 431.
  std::uint32_t max_header_list_bytes = 32 * 1024;
  // SETTINGS_INITIAL_WINDOW_SIZE: request body bytes a client may send on one stream ahead of us.
  std::uint32_t stream_window_bytes = 1u << 20;
  // The connection's receive window (all streams' request bodies together).
  std::uint32_t connection_window_bytes = 16u << 20;
  // Response bytes all streams of one connection may hold queued, not yet framed (peers' windows
  // closed, or a slow reader). Beyond it the stream holding the most is reset (RST_STREAM CANCEL,
  // counted in streams_dropped): max_stream_queue_bytes bounds one stream, this bounds the
  // connection's hundreds of them together. 0: no such bound.
  std::size_t connection_queue_bytes = 32u << 20;
};

struct server_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;  // 0: an ephemeral port, see server::port()
  unsigned threads = 1;       // event loops (cores)
  bool pin_cpus = false;      // pin loop i to CPU i
  std::string server_name = "weir";
  parser_limits limits{};  // head sizes, body limit (413)
  // Open connections, all cores together; 0: as many as the descriptor limit allows once
  // `descriptor_reserve` are set aside (for the log's segments, checkpoints and other files).
  std::size_t max_connections = 0;
  // Open connections from one client address; 0: no such cap. Behind a proxy every client shares one.
  std::size_t max_connections_per_client = 0;
  std::size_t descriptor_reserve = 256;
  // Request bodies being received, all cores together (bytes). A request whose body must wait for more
  // bytes reserves its Content-Length at head time (a chunked body as it grows); beyond the budget it
  // gets 503 with Retry-After before its body is read. Bodies that arrive whole with their head take
  // nothing. 0: no budget. Keep it >= limits.max_body_bytes, or the largest body can never be accepted.
  std::size_t body_budget_bytes = 256ull << 20;
  // Output one streamed response (an SSE subscriber) may leave queued because its peer does not read;
  // beyond it the connection is closed (the slowest subscribers go, the others keep their events).
  // Producers stay under it with exchange::on_drain().
  std::size_t max_stream_queue_bytes = 1ull << 20;
  // Bytes all connections of one loop may read in one turn of it (docs/http-engine.md, "Reading is
  // bounded per turn"): the rest waits for the next turns, after the timers (a cluster node's raft
  // ticks and heartbeats share the loop). A read that starts within it is not cut short. 0: no bound.
  std::size_t read_bytes_per_turn = 2ull << 20;
  std::chrono::milliseconds header_timeout{10'000};  // first byte to complete head
  std::chrono::milliseconds body_timeout{30'000};    // head to complete body
  std::chrono::milliseconds idle_timeout{60'000};    // keep-alive with no request in flight
  std::chrono::milliseconds write_timeout{30'000};   // peer not reading our output
  std::chrono::milliseconds drain_timeout{5'000};    // graceful shutdown: max wait for in-flight work
  // Told of every finished exchange (metrics, access log); must outlive the server. nullptr: the
  // engine reads no clock and copies nothing for it.
  exchange_observer* observer = nullptr;
  // HTTPS: every accepted connection is a TLS session with the context's certificate at accept time
  // (tls_context::load swaps it for new handshakes; established sessions keep theirs). nullptr: plain TCP.
  std::shared_ptr<io::tls_context> tls;
  h2_options h2{};
  // Tests: the transport of each accepted socket (e.g. io::chopping_transport); wins over `tls`.
  std::function<std::unique_ptr<io::transport>(int fd)> make_transport;
};

// Counters summed over every core; a thread-safe snapshot (each value is exact on its own core).
struct server_stats {
  std::uint64_t accepted = 0;
  std::uint64_t rejected = 0;  // over a connection cap, or no descriptor left
  std::uint64_t requests = 0;  // handed to the handler
  std::uint64_t sends = 0;     // send() calls (pipelined responses of one read share one)
  std::uint64_t open_connections = 0;
  std::uint64_t bodies_refused = 0;       // 503 + Retry-After: over the body budget
  std::uint64_t body_bytes_reserved = 0;  // now, by bodies being received
  std::uint64_t streams_dropped = 0;      // streamed responses closed over max_stream_queue_bytes
  std::uint64_t reads_deferred = 0;       // reads put off to a later loop turn (read_bytes_per_turn)
  std::uint64_t h2_connections = 0;       // connections that spoke HTTP/2 (h2c or h2), since start
  std::uint64_t h2_streams = 0;           // HTTP/2 streams (requests) opened, since start
};

class server {
 public:
  server(server_options opts, handler h);
  ~server();

  // Binds the listeners (throws nothing; errors are values). After it, port() is the bound port.
  status start();
  std::uint16_t port() const;

  // Runs every loop (threads-1 new threads plus the caller) until stop() has drained. Blocks.
  void run();
  // Thread-safe and async-signal-safe enough to call from a signalfd/handler thread: stop accepting,
  // finish in-flight responses (up to drain_timeout), close, and make run() return.
  void stop();

  unsigned threads() const;
  // The connection cap in force (max_connections, or what the descriptor limit allows).
  std::size_t connection_cap() const;
  io::event_loop& loop(unsigned i);

  server_stats stats() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace weir::http
