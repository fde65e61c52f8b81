// connection: one accepted HTTP/1.1 connection on one core (or HTTP/2: when its first bytes are the
// connection preface, an h2_session takes over the exchanges while the connection keeps the socket, the
// transport, the output buffer and the timeouts). Reads requests (pipelined), hands each to
// the handler with an `exchange`, writes responses in order, enforces timeouts, back-pressure and
// keep-alive rules. Owned by its loop_context's pool and reused after close; `generation_` makes
// stale exchange handles inert. Bytes move through an io::transport: the inline plain-TCP one, or TLS
// (server_options::tls), or a test fake (server_options::make_transport). Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "http/exchange.h"
#include "http/h2_session.h"
#include "http/request_parser.h"
#include "io/byte_buffer.h"
#include "io/event_loop.h"
#include "io/transport.h"

namespace weir::http {

struct loop_context;

class connection final : public io::io_handler {
 public:
  explicit connection(loop_context& ctx) : ctx_(&ctx) {}

  void open(int fd);
  void on_io(std::uint32_t events) override;
  void on_timeout();  // the deadline passed (called by loop_context::sweep)
  // Server shutdown: close now if nothing is in flight, else close after the current response.
  void drain();
  // Closes at once; fires on_close if an exchange was unfinished.
  void close_now();

  bool is_open() const { return fd_ >= 0; }
  std::int64_t deadline() const { return deadline_; }
  std::size_t active_index = 0;
  std::uint32_t client = 0;           // the peer's IPv4 address (host order), for the per-client cap
  bool read_deferred = false;         // queued in loop_context::deferred for a later turn's read budget
  void resume_reading() { drive(); }  // loop_context::resume_deferred
  // HTTP/2: queued for loop_context::flush_all (flush_later), which calls flushed() once per turn.
  bool flush_wanted = false;
  void flushed();

  // Keep-alive with nothing in flight: no request bytes buffered, no response pending or streaming.
  bool idle() const {
    return fd_ >= 0 && phase_ == phase::reading && in_.size() == 0 && out_.size() == 0 &&
           (!h2_ || h2_->idle());
  }
  std::int64_t idle_since() const { return idle_since_ms_; }

  // exchange implementation (generation-checked)
  bool exchange_alive(std::uint64_t gen) const {
    return gen == generation_ && (phase_ == phase::awaiting || phase_ == phase::streaming);
  }
  void respond(std::uint64_t gen, int status, std::span<const header> headers, std::string_view body);
  void begin_stream(std::uint64_t gen, int status, std::span<const header> headers);
  void write(std::uint64_t gen, std::string_view data);
  void flush(std::uint64_t gen);
  void end(std::uint64_t gen);
  void set_on_close(std::uint64_t gen, std::function<void()> fn);
  void set_on_drain(std::uint64_t gen, std::size_t low_water, std::function<void()> fn);
  std::size_t buffered_bytes(std::uint64_t gen) const { return gen == generation_ ? out_.size() : 0; }
  void set_tag(std::uint64_t gen, std::uint8_t tag) {
    if (gen == generation_) tag_ = tag;
  }

  // HTTP/2: the session of this connection if `gen` is still its generation (exchange.cc).
  h2_session* h2_for(std::uint64_t gen) const { return gen == generation_ && fd_ >= 0 ? h2_.get() : nullptr; }
  std::uint64_t generation() const { return generation_; }
  // HTTP/2: send what the session has ready (an exchange call outside nghttp2's callbacks).
  void h2_send();

 private:
  enum class phase : std::uint8_t {
    reading,    // waiting for (more of) a request head
    body,       // head complete, waiting for the body
    awaiting,   // request handed over, not answered yet
    streaming,  // streamed response in progress
    closing,    // final response queued; no more input processed
    lingering,  // write side shut down; dropping input until EOF or linger timeout
  };
  enum class deadline_kind : std::uint8_t { none, idle, handshake, head, body, write, linger };

  void check_thread() const;  // exchange calls must come from the connection's core
  void drive();
  std::size_t process(std::string_view data);
  bool head_may_be_decided(std::string_view rest, const parser_limits& limits) const;
  void dispatch(std::string_view raw, std::string_view body);
  void keep_partial(std::string_view data, std::size_t used);
  void compact_in(std::size_t used);
  void maybe_send_continue();
  void discard_input();
  bool accepting_input() const;
  void send_out();
  void after_exchange();
  void schedule_resume();
  void write_head(int status, std::span<const header> headers, std::uint64_t content_length, bool add_length,
                  bool chunked);
  void write_error(int status, std::string_view reason, bool retry_after = false);
  // The body budget (body_budget.h): reserve before waiting for body bytes, give back once the body
  // was handed over or dropped.
  bool reserve_body(std::size_t total);
  void release_body();
  void refuse_body();  // 503 + Retry-After: the body does not fit in the budget
  void notify_drain();
  void start_linger();
  void refresh_deadline();
  void maybe_shrink();
  // server_options::observer: the exchange's figures so far, and its report.
  void observe_dispatch(std::string_view raw);
  void observe_out(std::size_t before) { ex_bytes_out_ += out_.size() - before; }
  void observe_finish();
  // HTTP/2: the first bytes were (the start of) the connection preface. 0: not the preface, 1: need
  // more bytes to tell, 2: it is.
  int match_preface(std::string_view data) const;
  void start_h2();

  // The transport in use: &tcp_ (plain TCP, no allocation) or owned_ (TLS, a test fake).
  std::ptrdiff_t read_some(char* buf, std::size_t len) {
    return owned_ ? owned_->read(buf, len) : tcp_.read(buf, len);
  }
  std::ptrdiff_t write_some(const char* buf, std::size_t len) {
    return owned_ ? owned_->write(buf, len) : tcp_.write(buf, len);
  }
  void update_interest();  // EPOLLOUT in or out of the interest set as the blocked calls need it

  loop_context* ctx_;
  int fd_ = -1;
  io::tcp_transport tcp_;
  std::unique_ptr<io::transport> owned_;
  std::int64_t opened_ms_ = 0;
  std::uint64_t generation_ = 1;
  phase phase_ = phase::reading;
  io::byte_buffer in_;
  io::byte_buffer out_;
  io::byte_buffer body_;            // de-chunked request body
  std::unique_ptr<h2_session> h2_;  // HTTP/2 once the preface was read; null for HTTP/1.1
  bool h1_seen_ = false;            // bytes that are not the preface arrived: HTTP/1.1 for good

  // Request being read.
  std::size_t need_total_ = 0;  // content-length request: head + body bytes needed
  std::size_t head_len_ = 0;    // of the partial request at the front of in_
  // Bytes of an incomplete head already parsed (need_more): a head can only complete, and a limit only
  // be crossed, with new bytes, so a slow sender's head is re-parsed per new line, not per byte.
  std::size_t head_seen_ = 0;
  bool head_has_lf_ = false;   // those bytes hold a line feed (the request line is complete)
  std::size_t chunk_pos_ = 0;  // chunked: raw bytes before this offset (after the head) are decoded
  bool chunked_ = false;
  bool continue_sent_ = false;
  bool expect_continue_ = false;
  chunked_decoder decoder_;
  std::int64_t head_started_ms_ = 0;
  std::int64_t body_started_ms_ = 0;
  std::size_t body_reserved_ = 0;  // of the node's body budget, for the body being read

  // Exchange in progress.
  bool keep_alive_ = true;
  bool is_head_ = false;
  bool http10_ = false;
  bool chunked_out_ = false;
  bool body_allowed_ = false;
  bool backlog_exceeded_ = false;
  bool in_handler_ = false;
  bool resume_scheduled_ = false;
  std::uint8_t tag_ = 0;
  int ex_status_ = 0;
  std::uint64_t read_ns_ = 0;  // observer only: when the last read returned bytes
  std::uint64_t ex_start_ns_ = 0, ex_head_ns_ = 0;
  std::uint64_t ex_bytes_in_ = 0, ex_bytes_out_ = 0;
  std::string ex_method_, ex_path_;  // observer->wants_request_line only
  std::function<void()> on_close_;
  std::function<void()> on_drain_;
  std::size_t drain_low_ = 0;

  // Socket state.
  bool readable_ = false;               // edge seen, not yet read to EAGAIN
  bool peer_closed_ = false;            // FIN or error seen
  bool want_write_ = false;             // last send hit EAGAIN
  bool read_blocked_on_write_ = false;  // TLS: the last read waits for writability (handshake output)
  bool write_blocked_on_read_ = false;  // TLS: the last write waits for readability (handshake input)
  bool out_registered_ = false;         // EPOLLOUT in the epoll interest set
  bool close_after_write_ = false;
  std::int64_t write_progress_ms_ = 0;
  std::int64_t idle_since_ms_ = 0;
  std::int64_t linger_since_ms_ = 0;
  std::int64_t deadline_ = 0;  // 0: none
  deadline_kind deadline_kind_ = deadline_kind::none;
};

}  // namespace weir::http
