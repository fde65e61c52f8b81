// loop_context: the per-core state of the HTTP engine (one per event loop, used only on that loop's
// thread): options, handler, the Date cache, the read scratch buffer, the request-head scratch, the
// listener and the pool of connection objects. Connections point to it; it outlives them.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http/date_cache.h"
#include "http/exchange.h"
#include "http/request_parser.h"
#include "http/server.h"
#include "http/turn_budget.h"
#include "io/event_loop.h"

namespace weir::http {

class connection;

// Engine tunables that are not (yet) server_options.
inline constexpr std::size_t read_scratch_bytes = 64 * 1024;
// Output queued beyond this stops reading further requests from that connection (back-pressure).
inline constexpr std::size_t output_high_water = 64 * 1024;
// A buffer emptied above this size is freed rather than kept (idle connections stay small).
inline constexpr std::size_t keep_buffer_bytes = 16 * 1024;
// A chunked request body reserves its share of the node's body budget in steps of this size.
inline constexpr std::size_t body_budget_step = 64 * 1024;
// Retry-After (seconds) of a 503 for a request body over the node's body budget.
inline constexpr int body_budget_retry_after_s = 1;
// After a Connection: close response, how long we keep reading (and dropping) the peer's bytes so the
// close does not turn into a reset that destroys the response in flight.
inline constexpr std::int64_t linger_ms = 1000;

class listener;
class admission;
class body_budget;

struct loop_context {
  loop_context(io::event_loop& l, const server_options& o, const handler& h);
  ~loop_context();

  io::event_loop* loop;
  const server_options* opts;
  const handler* on_request;
  admission* limits = nullptr;    // the node-wide connection caps (owned by the server)
  body_budget* bodies = nullptr;  // the node-wide budget of request bodies in flight (owned by the server)
  std::string server_line;        // "Server: weir\r\n"
  date_cache date;
  // "HTTP/1.1 200 OK\r\nServer: ...\r\nDate: ...\r\n": the common head start in one copy; rebuilt in
  // place (same length, no allocation) when the Date changes.
  std::string ok_prefix;
  void update_date(std::time_t now);
  std::unique_ptr<char[]> read_scratch;
  request_head head;  // parse scratch: views are valid during one handler call

  std::vector<std::unique_ptr<connection>> pool;
  std::vector<connection*> free_list;
  std::vector<connection*> recycle;  // closed in this iteration: reused only after the epoll batch
  std::vector<connection*> active;   // connection::active_index_ is the position
  std::unique_ptr<listener> accept;
  bool draining = false;
  int processing = 0;                // depth of connection::drive() calls in progress (see connection.cc)
  std::function<void()> on_drained;  // set by the server: this loop has no connection left

  // Statistics: written by the loop thread only (plain load+store, no locked instruction), read by
  // server::stats() from any thread.
  struct counter {
    std::atomic<std::uint64_t> v{0};
    void add(std::uint64_t n = 1) {
      v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    void set(std::uint64_t n) { v.store(n, std::memory_order_relaxed); }
    std::uint64_t get() const { return v.load(std::memory_order_relaxed); }
  };
  counter accepted, rejected, requests, sends, open;
  counter bodies_refused;   // 503: the body did not fit in the body budget
  counter streams_dropped;  // streamed responses closed over max_stream_queue_bytes
  counter reads_deferred;   // reads put off to a later turn: the turn's read budget was spent
  counter h2_sessions;      // connections that switched to HTTP/2
  counter h2_streams;       // HTTP/2 streams opened by clients

  // Reading is bounded per turn (turn_budget.h). A connection that finds the turn's budget spent, or
  // others already waiting for it, queues here (oldest first, connection::read_deferred) and reads again
  // from a posted task, after this turn's timers, as the budget of the turns after allows.
  turn_budget reads;
  std::deque<connection*> deferred;
  connection* resuming = nullptr;  // the queued connection resume_deferred() is driving
  bool resume_posted = false;
  // Whether `c` may start a read now.
  bool may_read(const connection* c) {
    return reads.allows(loop->turn()) && (deferred.empty() || resuming == c);
  }
  void defer(connection* c);
  void resume_deferred();

  // HTTP/2 output asked for outside a read (answers and writes from tasks, timers, other connections'
  // handlers): the connection queues here and sends once, at the end of the loop turn
  // (event_loop::at_turn_end), with everything its streams produced in the turn, instead of one send
  // per exchange call. (Responses produced while a read is processed leave at the end of that drive(),
  // as before: deferring those to the end of the turn too kept every connection's streams open at
  // once, which cost more at 100 streams per connection.)
  std::vector<connection*> flushes;
  std::vector<connection*> flushing;  // the batch flush_all() is sending
  bool flush_posted = false;          // flush_all() is due at the end of this turn
  void flush_later(connection* c);
  void flush_all();

  connection* acquire();
  void release(connection* c);
  void sweep();  // timeouts; runs from a repeating timer
  // At the connection cap: closes this core's longest-idle keep-alive connection (nothing in flight),
  // so that a new client is not refused because others hold idle sockets. False: none idle here.
  bool close_oldest_idle();
  void begin_drain();
  void force_close_all();
  void check_drained();
};

}  // namespace weir::http
