// h2_session: HTTP/2 (RFC 9113) on one accepted connection, once its first bytes were the connection
// preface (h2c with prior knowledge, or h2 after ALPN). libnghttp2 does the framing, HPACK and flow
// control; this class turns its streams into the same `exchange` an HTTP/1.1 request gets, so the
// handlers do not know which version they serve.
//
// Bytes: the connection reads from its transport and hands them to receive(); frames to send go into the
// connection's output buffer (produce(), called from connection::send_out) and leave through the same
// transport, with the same write timeout and back-pressure. A response body is queued per stream and
// framed into the output buffer without another copy (nghttp2's NO_COPY data frames).
//
// Owned by its connection (one per connection, created when the preface is seen). Loop thread only;
// exchanges reach it through connection::h2_for(generation), and a stream id that is gone makes the
// handle inert.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "http/exchange.h"
#include "http/h2_stream_table.h"
#include "http/request_parser.h"
#include "io/byte_buffer.h"

using nghttp2_session = struct nghttp2_session;

namespace weir::http {

class connection;
struct loop_context;

// The 24 bytes every HTTP/2 client sends first (RFC 9113 3.4).
inline constexpr std::string_view h2_preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

class h2_session {
 public:
  h2_session(loop_context& ctx, connection& conn, io::byte_buffer& out);
  ~h2_session();
  h2_session(const h2_session&) = delete;
  h2_session& operator=(const h2_session&) = delete;

  // Feeds received bytes (starting with the preface). Handlers run from inside. Consumes everything.
  void receive(std::string_view data);
  // Moves the frames nghttp2 has ready into the output buffer, up to `high_water` bytes queued there.
  // False: the session failed and the connection must close.
  bool produce(std::size_t high_water);
  // Server shutdown or idle timeout: GOAWAY (NO_ERROR); streams already started finish, then the
  // connection closes.
  void shutdown();
  bool shutting_down() const { return shutting_down_; }
  // The connection closed: unfinished exchanges get their on_close (from a task), the observer its
  // reports, body budget reservations are returned. Every later call is a no-op.
  void closed();

  // Nothing more to read or write (GOAWAY exchanged, or a fatal error): close once the output is sent.
  bool done() const;
  // No stream open: the connection counts as idle (idle timeout, close_oldest_idle).
  bool idle() const { return streams_.empty(); }
  std::int64_t idle_since_ms() const { return idle_since_ms_; }
  // When a response stopped moving because the peer's flow-control window is closed (0: none is).
  std::int64_t stalled_since_ms() const { return stalled_since_ms_; }
  std::size_t open_streams() const { return streams_.size(); }
  // When the oldest request still waiting for the end of its head or body began (0: none waits). The
  // connection bounds it with body_timeout, as an HTTP/1.1 body.
  std::int64_t oldest_incomplete_ms() const;
  // Answers 408 to every request incomplete since before `cutoff_ms` (the stream is then reset).
  void expire_incomplete(std::int64_t cutoff_ms);

  // The exchange calls (exchange.cc), by stream id.
  bool alive(std::int32_t id) const;
  void respond(std::int32_t id, int status, std::span<const header> headers, std::string_view body);
  void begin_stream(std::int32_t id, int status, std::span<const header> headers);
  void write(std::int32_t id, std::string_view data);
  void flush(std::int32_t id);
  void end(std::int32_t id);
  void set_on_close(std::int32_t id, std::function<void()> fn);
  void set_on_drain(std::int32_t id, std::size_t low_water, std::function<void()> fn);
  std::size_t buffered_bytes(std::int32_t id) const;
  void set_tag(std::int32_t id, std::uint8_t tag);

  struct stream;  // h2_session.cc

  // nghttp2 callbacks (h2_session.cc); public only so that the C callbacks can reach them.
  int on_begin_headers(std::int32_t id);
  int on_header(std::int32_t id, std::string_view name, std::string_view value);
  int on_data(std::int32_t id, std::string_view data);
  int on_frame_recv(std::int32_t id, std::uint8_t type, std::uint8_t flags, std::size_t length);
  int on_frame_send(std::int32_t id, std::uint8_t type, std::uint8_t flags);
  int on_stream_close(std::int32_t id, std::uint32_t error_code);
  long on_read_data(std::int32_t id, std::size_t length, std::uint32_t* flags);
  int on_send_data(std::int32_t id, const std::uint8_t* framehd, std::size_t length);
  long on_send(const std::uint8_t* data, std::size_t length);

 private:
  stream* find(std::int32_t id) const;
  // A stream object, reused from this thread's closed ones when there is one (h2_session.cc).
  static std::unique_ptr<stream> new_stream();
  static void recycle(std::unique_ptr<stream> s);  // a closed stream, kept for the next one
  void dispatch(stream& s);
  void answer(stream& s, int status, std::string_view reason, bool retry_after = false);
  void submit(stream& s, int status, std::span<const header> headers, bool add_length,
              std::uint64_t content_length, bool with_body);
  void kick();  // send what is ready now, unless nghttp2 is calling us
  void check_thread() const;
  void observe_finish(stream& s);
  void update_stall();
  void calm_down();  // GOAWAY ENHANCE_YOUR_CALM: the peer abuses the protocol
  // Response bytes queued on `s` (n of them just appended): counted against the connection's
  // budget (h2_options::connection_queue_bytes), which resets the streams holding most beyond it.
  void queued(stream& s, std::size_t n);
  void drop(stream& s);       // reset a stream whose queue is over a budget (RST_STREAM CANCEL)
  void malformed(stream& s);  // RFC 9113 8.1.1: RST_STREAM PROTOCOL_ERROR, the request never dispatched
  bool take_reset_token();

  loop_context* ctx_;
  connection* conn_;
  io::byte_buffer* out_;
  nghttp2_session* session_ = nullptr;
  h2_stream_table<stream> streams_;
  mutable stream* last_ = nullptr;  // the stream find() returned last (a one-entry cache)
  bool in_callbacks_ = false;       // inside nghttp2_session_mem_recv/send: no nested send
  // nghttp2 may have frames to send: set by everything that can queue one (received bytes, a submit, a
  // resumed body), cleared by a send that ran dry; produce() skips the send when it is clear.
  bool send_wanted_ = true;
  bool send_full_ = false;  // the send in progress stopped at high_water_
  bool failed_ = false;
  bool closed_ = false;
  std::size_t high_water_ = 0;    // of the send in progress
  bool calm_ = false;             // calm_down() was called
  bool shutting_down_ = false;    // shutdown() was called
  std::size_t queued_bytes_ = 0;  // response bytes of every stream not dropped, not framed yet
  std::uint32_t empty_data_frames_ = 0;
  std::uint32_t reset_tokens_ = 0;  // rapid-reset bucket (h2_session.cc)
  std::int64_t reset_tokens_ms_ = 0;
  std::int64_t idle_since_ms_ = 0;
  std::int64_t stalled_since_ms_ = 0;
};

}  // namespace weir::http
