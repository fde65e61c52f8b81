#include "http/connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>

#include "http/body_budget.h"
#include "http/loop_context.h"
#include "http/status_text.h"
#include "io/socket.h"
#include "io/tls.h"

namespace weir::http {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool has_header(std::span<const header> headers, std::string_view name) {
  return std::any_of(headers.begin(), headers.end(), [&](const header& h) { return iequals(h.name, name); });
}

char* put(char* p, std::string_view s) {
  if (s.empty()) return p;
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

std::uint64_t steady_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// RAII depth counter: while any connection of this loop is inside drive(), another connection that
// becomes ready must not drive() inline (it would reuse the loop's read scratch buffer).
struct processing_scope {
  explicit processing_scope(loop_context& c) : ctx(c) { ++ctx.processing; }
  ~processing_scope() { --ctx.processing; }
  loop_context& ctx;
};

}  // namespace

void connection::open(int fd) {
  fd_ = fd;
  tcp_.reset(fd);
  owned_.reset();
  if (ctx_->opts->make_transport) {
    owned_ = ctx_->opts->make_transport(fd);
  } else if (ctx_->opts->tls) {
    owned_ = ctx_->opts->tls->accept(fd);
    if (!owned_) {  // no certificate loaded or out of memory: nothing can be served
      close_now();
      return;
    }
  }
  read_blocked_on_write_ = write_blocked_on_read_ = false;
  h1_seen_ = false;
  opened_ms_ = ctx_->loop->now_ms();
  phase_ = phase::reading;
  need_total_ = head_len_ = chunk_pos_ = 0;
  chunked_ = continue_sent_ = expect_continue_ = false;
  head_started_ms_ = body_started_ms_ = 0;
  read_ns_ = 0;
  keep_alive_ = true;
  is_head_ = http10_ = chunked_out_ = in_handler_ = resume_scheduled_ = backlog_exceeded_ = false;
  readable_ = peer_closed_ = want_write_ = close_after_write_ = false;
  idle_since_ms_ = ctx_->loop->now_ms();
  refresh_deadline();
  // EPOLLOUT is asked for only once a send hits EAGAIN (most connections never need it).
  out_registered_ = false;
  if (!ctx_->loop->add_fd(fd, EPOLLIN | EPOLLRDHUP, this)) close_now();
}

void connection::on_io(std::uint32_t events) {
  if (fd_ < 0) return;
  if (events & EPOLLERR) {
    close_now();
    return;
  }
  if (events & (EPOLLHUP | EPOLLRDHUP)) {
    peer_closed_ = true;
    readable_ = true;  // read what is left, up to the end of stream
  }
  if (events & EPOLLIN) readable_ = true;
  if ((events & EPOLLOUT) && read_blocked_on_write_) {  // TLS: the handshake output could leave
    read_blocked_on_write_ = false;
    readable_ = true;
  }
  if (want_write_ && ((events & EPOLLOUT) || ((events & EPOLLIN) && write_blocked_on_read_))) {
    send_out();
    if (fd_ < 0) return;
  }
  drive();
}

bool connection::accepting_input() const {
  return fd_ >= 0 && (phase_ == phase::reading || phase_ == phase::body) && out_.size() < output_high_water;
}

void connection::drive() {
  if (fd_ < 0) return;
  processing_scope scope(*ctx_);
  if (phase_ == phase::lingering) {
    discard_input();
    return;
  }
  if (!in_.empty() && accepting_input()) {
    std::size_t used = process(in_.view());
    if (fd_ < 0) return;
    compact_in(used);
  }
  while (readable_ && accepting_input()) {
    if (!ctx_->may_read(this)) {  // this turn's read budget is spent: go on in a later turn
      ctx_->defer(this);
      break;
    }
    bool use_scratch = in_.empty();
    char* buf;
    std::size_t cap;
    if (use_scratch) {
      buf = ctx_->read_scratch.get();
      cap = read_scratch_bytes;
    } else {
      std::size_t want = 16 * 1024;
      if (need_total_ > in_.size()) want = std::clamp<std::size_t>(need_total_ - in_.size(), want, 1 << 20);
      buf = in_.prepare(want);
      cap = in_.writable();
    }
    auto n = read_some(buf, cap);
    if (n < 0) {
      readable_ = false;
      if (n == io::transport::failed) {
        peer_closed_ = true;
      } else if (owned_ && owned_->read_needs_writable()) {
        read_blocked_on_write_ = true;
        update_interest();
      }
      break;
    }
    if (n == 0) {
      readable_ = false;
      peer_closed_ = true;
      break;
    }
    ctx_->reads.charge(static_cast<std::size_t>(n));
    // One clock read per read, not per request: pipelined requests of one read share it.
    if (ctx_->opts->observer != nullptr) read_ns_ = steady_ns();
    // Edge-triggered: a short read means the socket was drained; new data raises a new edge. (Not so for
    // TLS, which returns one record per read: it reads on until would_block.)
    if (static_cast<std::size_t>(n) < cap && (!owned_ || owned_->short_read_drains())) readable_ = false;
    if (use_scratch) {
      std::string_view data(buf, static_cast<std::size_t>(n));
      std::size_t used = process(data);
      if (fd_ < 0) return;
      keep_partial(data, used);
    } else {
      in_.commit(static_cast<std::size_t>(n));
      std::size_t used = process(in_.view());
      if (fd_ < 0) return;
      compact_in(used);
    }
  }
  // Every response produced from this read goes out in one send.
  bool throttled = out_.size() >= output_high_water;
  send_out();
  if (fd_ < 0) return;
  // Back-pressure released at once: go on from a task (edge-triggered, nobody would tell us again).
  if (throttled && accepting_input() && (readable_ || !in_.empty())) schedule_resume();
  if (peer_closed_) {
    if (phase_ == phase::awaiting || phase_ == phase::streaming) {
      close_now();  // the client went away before its answer: on_close fires
      return;
    }
    if (!readable_ && (phase_ == phase::reading || phase_ == phase::body)) {
      if (out_.empty()) {
        close_now();
        return;
      }
      phase_ = phase::closing;
      close_after_write_ = true;
    }
    if (phase_ == phase::lingering) {
      close_now();
      return;
    }
  }
  maybe_shrink();
  refresh_deadline();
}

// After need_more on the first `head_seen_` bytes of `rest`: can the longer `rest` change the answer?
// Only a new line feed (the end of a line, maybe of the head) or crossing a size limit can.
bool connection::head_may_be_decided(std::string_view rest, const parser_limits& limits) const {
  if (rest.size() > limits.max_head_bytes) return true;
  if (!head_has_lf_ && rest.size() > limits.max_request_line) return true;
  return std::memchr(rest.data() + head_seen_, '\n', rest.size() - head_seen_) != nullptr;
}

int connection::match_preface(std::string_view data) const {
  std::size_t n = std::min(data.size(), h2_preface.size());
  if (data.substr(0, n) != h2_preface.substr(0, n)) return 0;
  return n == h2_preface.size() ? 2 : 1;
}

void connection::start_h2() {
  h2_ = std::make_unique<h2_session>(*ctx_, *this, out_);
}

void connection::h2_send() {
  if (fd_ < 0) return;
  ctx_->flush_later(this);  // answers and writes of one turn share a send
}

void connection::flushed() {
  if (fd_ < 0) return;
  flush_wanted = false;
  send_out();
  if (fd_ >= 0) refresh_deadline();
}

std::size_t connection::process(std::string_view data) {
  if (!h2_ && !h1_seen_ && phase_ == phase::reading && ctx_->opts->h2.enabled) {
    // RFC 9113 3.3/3.4: h2c with prior knowledge, or h2 after ALPN, starts with the preface, which no
    // HTTP/1.1 request can begin with. Decided once, on the connection's first bytes.
    switch (match_preface(data)) {
      case 1:
        return 0;  // keep the bytes, read more
      case 2:
        start_h2();
        break;
      default:
        h1_seen_ = true;
    }
  }
  if (h2_) {
    h2_->receive(data);
    if (h2_->done()) {
      phase_ = phase::closing;
      close_after_write_ = true;
    }
    return data.size();
  }
  const auto& limits = ctx_->opts->limits;
  request_head& head = ctx_->head;
  std::size_t pos = 0;
  while (accepting_input() && pos < data.size()) {
    std::string_view rest = data.substr(pos);
    if (phase_ == phase::reading) {
      if (head_started_ms_ == 0) head_started_ms_ = ctx_->loop->now_ms();
      if (pos == 0 && head_seen_ > 0 && rest.size() > head_seen_ && !head_may_be_decided(rest, limits)) {
        head_seen_ = rest.size();
        break;
      }
      auto r = parse_request_head(rest, head, limits);
      if (r.status == parse_status::need_more) {
        head_seen_ = rest.size();
        head_has_lf_ = std::memchr(rest.data(), '\n', rest.size()) != nullptr;
        break;
      }
      head_seen_ = 0;
      if (r.status == parse_status::error) {
        write_error(r.error_status, r.reason);
        return data.size();
      }
      head_len_ = r.consumed;
      if (head.framing == body_framing::none) {
        std::size_t len = head_len_;
        dispatch(rest.substr(0, len), {});
        pos += len;
        continue;
      }
      phase_ = phase::body;
      body_started_ms_ = ctx_->loop->now_ms();
      expect_continue_ = head.expect_continue && head.version_minor >= 1;
      continue_sent_ = false;
      if (head.framing == body_framing::content_length) {
        chunked_ = false;
        if (head.content_length > limits.max_body_bytes) {
          write_error(413, "request body too large");
          return data.size();
        }
        need_total_ = head_len_ + static_cast<std::size_t>(head.content_length);
        // Decided at head time: a body that must wait for more bytes first takes its share of the
        // node's body budget, or is refused before any of it is read.
        if (rest.size() < need_total_ && !reserve_body(static_cast<std::size_t>(head.content_length))) {
          refuse_body();
          return data.size();
        }
      } else {
        chunked_ = true;
        chunk_pos_ = head_len_;
        decoder_.reset();
        decoder_.set_max_body(limits.max_body_bytes);
        body_.clear();
      }
    }
    // phase_ == body: the head was parsed (here or in an earlier read) and is at the front of `rest`.
    if (!chunked_) {
      if (rest.size() < need_total_) {
        maybe_send_continue();
        break;
      }
      std::size_t total = need_total_;
      auto r = parse_request_head(rest, head, limits);  // the views must point into `rest`
      WEIR_ASSERT(r.status == parse_status::complete && r.consumed == head_len_,
                  "re-parse of a complete head changed: status {} consumed {} vs {}",
                  static_cast<int>(r.status), r.consumed, head_len_);
      dispatch(rest.substr(0, total), rest.substr(head_len_, total - head_len_));
      pos += total;
      continue;
    }
    bool too_large = false;
    std::uint64_t max_body = limits.max_body_bytes;
    auto st = decoder_.feed(rest.substr(chunk_pos_), [&](std::string_view d) {
      if (body_.size() + d.size() > max_body) {
        too_large = true;
        return;
      }
      body_.append(d);
    });
    chunk_pos_ += st.consumed;
    if (st.status == parse_status::error) {
      write_error(st.error_status != 0 ? st.error_status : 400, st.reason);
      return data.size();
    }
    if (too_large) {
      write_error(413, "request body too large");
      return data.size();
    }
    if (st.status == parse_status::need_more) {
      // A chunked body counts against the budget as it grows, while it waits for more bytes.
      if (!reserve_body(body_.size())) {
        refuse_body();
        return data.size();
      }
      maybe_send_continue();
      break;
    }
    std::size_t total = chunk_pos_;
    auto r = parse_request_head(rest, head, limits);
    WEIR_ASSERT(r.status == parse_status::complete && r.consumed == head_len_,
                "re-parse of a chunked head changed: consumed {} vs {}", r.consumed, head_len_);
    dispatch(rest.substr(0, total), body_.view());
    body_.clear();
    pos += total;
  }
  return pos;
}

void connection::maybe_send_continue() {
  // RFC 9110 10.1.1: a server that will read the body sends 100 (Continue) first. Bodies over the limit
  // were already answered with 413 before reading them.
  if (expect_continue_ && !continue_sent_) {
    out_.append("HTTP/1.1 100 Continue\r\n\r\n");
    continue_sent_ = true;
  }
}

bool connection::reserve_body(std::size_t total) {
  if (total <= body_reserved_) return true;
  std::size_t want = total - body_reserved_;
  if (chunked_) {
    // In steps, so that a body trickling in does not take one atomic operation per read.
    want = (want + body_budget_step - 1) / body_budget_step * body_budget_step;
  }
  if (!ctx_->bodies->try_reserve(want)) return false;
  body_reserved_ += want;
  return true;
}

void connection::release_body() {
  ctx_->bodies->release(body_reserved_);
  body_reserved_ = 0;
}

void connection::refuse_body() {
  ctx_->bodies_refused.add();
  write_error(503, "too many request bodies in flight; retry later", true);
}

void connection::keep_partial(std::string_view data, std::size_t used) {
  if (used >= data.size()) return;
  std::string_view rest = data.substr(used);
  if (phase_ == phase::body && chunked_) {
    // Keep the head and the undecoded tail; the decoded chunk framing is not needed any more.
    in_.append(rest.substr(0, head_len_));
    in_.append(rest.substr(chunk_pos_));
    chunk_pos_ = head_len_;
  } else {
    in_.append(rest);
  }
}

void connection::compact_in(std::size_t used) {
  in_.consume(std::min(used, in_.size()));
  if (phase_ == phase::body && chunked_ && chunk_pos_ > head_len_) {
    in_.erase(head_len_, chunk_pos_ - head_len_);
    chunk_pos_ = head_len_;
  }
}

void connection::dispatch(std::string_view raw, std::string_view body) {
  const request_head& head = ctx_->head;
  tag_ = 0;
  if (ctx_->opts->observer != nullptr) observe_dispatch(raw);
  release_body();  // the handler copies what it keeps of the body
  keep_alive_ = head.keep_alive && !ctx_->draining;
  is_head_ = head.method == method::head;
  http10_ = head.version_minor == 0;
  need_total_ = 0;
  head_len_ = 0;
  chunk_pos_ = 0;
  chunked_ = false;
  expect_continue_ = false;
  head_started_ms_ = 0;
  phase_ = phase::awaiting;
  ctx_->requests.add();
  exchange ex;
  ex.loop_ = ctx_->loop;
  ex.conn_ = this;
  ex.generation_ = generation_;
  request req{&head, body};
  in_handler_ = true;
  (*ctx_->on_request)(req, ex);
  in_handler_ = false;
}

void connection::write_head(int status, std::span<const header> headers, std::uint64_t content_length,
                            bool add_length, bool chunked) {
  std::string_view reason = status == 200 ? std::string_view("OK") : status_text(status);
  std::string_view server_line = ctx_->server_line;
  std::string_view date_line = ctx_->date.header_line();
  std::size_t est = 9 + 4 + reason.size() + 2 + server_line.size() + date_line.size() + 40 + 30 + 26 + 2;
  for (const auto& h : headers) est += h.name.size() + h.value.size() + 4;
  char* start = out_.prepare(est);
  char* p = start;
  if (status == 200) {
    p = put(p, ctx_->ok_prefix);
  } else {
    p = put(p, "HTTP/1.1 ");
    if (status < 100 || status > 999) status = 500;
    p[0] = static_cast<char>('0' + status / 100);
    p[1] = static_cast<char>('0' + status / 10 % 10);
    p[2] = static_cast<char>('0' + status % 10);
    p[3] = ' ';
    p = put(p + 4, reason);
    p = put(p, "\r\n");
    p = put(p, server_line);
    p = put(p, date_line);
  }
  for (const auto& h : headers) {
    p = put(p, h.name);
    p = put(p, ": ");
    p = put(p, h.value);
    p = put(p, "\r\n");
  }
  if (add_length) {
    p = put(p, "Content-Length: ");
    p = std::to_chars(p, p + 20, content_length).ptr;
    p = put(p, "\r\n");
  }
  if (chunked) p = put(p, "Transfer-Encoding: chunked\r\n");
  if (!keep_alive_) {
    p = put(p, "Connection: close\r\n");
  } else if (http10_) {
    p = put(p, "Connection: keep-alive\r\n");  // RFC 9112 9.3: HTTP/1.0 persistence is opt-in
  }
  p = put(p, "\r\n");
  out_.commit(static_cast<std::size_t>(p - start));
}

void connection::write_error(int status, std::string_view reason, bool retry_after) {
  // No exchange was handed to the handler: the engine's own answer is reported with tag 0.
  exchange_observer* obs = ctx_->opts->observer;
  const std::size_t out_before = out_.size();
  keep_alive_ = false;
  http10_ = false;
  release_body();
  if (reason.empty()) reason = status_text(status);
  static_assert(body_budget_retry_after_s == 1, "the Retry-After value below");
  static constexpr header type[] = {{"Content-Type", "text/plain"}, {"Retry-After", "1"}};
  write_head(status, std::span<const header>(type, retry_after ? 2 : 1), reason.size() + 1, true, false);
  out_.append(reason);
  out_.append('\n');
  if (obs != nullptr) {
    tag_ = 0;
    ex_status_ = status;
    ex_start_ns_ = read_ns_ != 0 ? read_ns_ : steady_ns();
    ex_bytes_in_ = ex_bytes_out_ = 0;
    ex_method_.clear();
    ex_path_.clear();
    observe_out(out_before);
    observe_finish();
  }
  phase_ = phase::closing;
  close_after_write_ = true;
  need_total_ = 0;
  in_.clear();
  body_.clear();
}

void connection::check_thread() const {
  // Catches the common mistake of answering from the core that did the work instead of hopping back with
  // exchange.loop()->post(). (Calls from no loop at all, e.g. cleanup after run() returned, are let
  // through: by then every connection is closed and the call is a no-op.)
  auto* cur = io::event_loop::current();
  WEIR_ASSERT(cur == nullptr || cur == ctx_->loop,
              "exchange used off its core: called on loop {} for a connection of loop {}",
              io::event_loop::current() ? static_cast<int>(io::event_loop::current()->index()) : -1,
              ctx_->loop->index());
}

void connection::respond(std::uint64_t gen, int status, std::span<const header> headers,
                         std::string_view body) {
  check_thread();
  if (gen != generation_ || phase_ != phase::awaiting) return;
  if (ctx_->draining) keep_alive_ = false;
  bool has_body = status_has_body(status);
  bool add_length = has_body && !has_header(headers, "content-length");
  const std::size_t out_before = out_.size();
  write_head(status, headers, body.size(), add_length, false);
  if (has_body && !is_head_) out_.append(body);
  if (ctx_->opts->observer != nullptr) {
    ex_status_ = status;
    observe_out(out_before);
    observe_finish();
  }
  after_exchange();
}

void connection::begin_stream(std::uint64_t gen, int status, std::span<const header> headers) {
  check_thread();
  if (gen != generation_ || phase_ != phase::awaiting) return;
  if (ctx_->draining) keep_alive_ = false;
  body_allowed_ = status_has_body(status) && !is_head_;
  // RFC 9112 6.3: without chunked coding (HTTP/1.0) the body ends when the connection closes.
  chunked_out_ = body_allowed_ && !http10_;
  if (body_allowed_ && http10_) keep_alive_ = false;
  backlog_exceeded_ = false;
  const std::size_t out_before = out_.size();
  write_head(status, headers, 0, false, chunked_out_);
  phase_ = phase::streaming;
  if (ctx_->opts->observer != nullptr) {
    ex_status_ = status;
    ex_head_ns_ = steady_ns();
    observe_out(out_before);
  }
}

void connection::write(std::uint64_t gen, std::string_view data) {
  check_thread();
  if (gen != generation_ || phase_ != phase::streaming || !body_allowed_ || data.empty() ||
      backlog_exceeded_) {
    return;
  }
  const std::size_t out_before = out_.size();
  if (chunked_out_) {
    char size[20];
    auto* e = std::to_chars(size, size + sizeof size, data.size(), 16).ptr;
    out_.append(std::string_view(size, static_cast<std::size_t>(e - size)));
    out_.append("\r\n");
    out_.append(data);
    out_.append("\r\n");
  } else {
    out_.append(data);
  }
  if (ctx_->opts->observer != nullptr) observe_out(out_before);
  const std::size_t queue_limit = ctx_->opts->max_stream_queue_bytes;
  if (queue_limit != 0 && out_.size() > queue_limit) {
    // The peer does not read: give up on it rather than buffer without bound. Closed from a task so
    // on_close never runs inside the caller's write().
    backlog_exceeded_ = true;
    ctx_->streams_dropped.add();
    auto g = generation_;
    ctx_->loop->post([this, g] {
      if (generation_ == g) close_now();
    });
  }
}

void connection::flush(std::uint64_t gen) {
  check_thread();
  if (gen != generation_ || phase_ != phase::streaming || in_handler_) return;
  send_out();
}

void connection::end(std::uint64_t gen) {
  check_thread();
  if (gen != generation_ || phase_ != phase::streaming) return;
  const std::size_t out_before = out_.size();
  if (chunked_out_) out_.append("0\r\n\r\n");
  if (ctx_->opts->observer != nullptr) {
    observe_out(out_before);
    observe_finish();
  }
  after_exchange();
}

void connection::set_on_close(std::uint64_t gen, std::function<void()> fn) {
  check_thread();
  if (exchange_alive(gen)) on_close_ = std::move(fn);
}

void connection::set_on_drain(std::uint64_t gen, std::size_t low_water, std::function<void()> fn) {
  check_thread();
  if (!exchange_alive(gen)) return;
  on_drain_ = std::move(fn);
  drain_low_ = low_water;
  notify_drain();
}

void connection::notify_drain() {
  if (!on_drain_ || out_.size() > drain_low_) return;
  // From a task: the producer may write again, which must not happen inside send_out().
  ctx_->loop->post(std::move(on_drain_));
  on_drain_ = nullptr;
}

void connection::after_exchange() {
  ++generation_;
  on_close_ = nullptr;
  on_drain_ = nullptr;
  idle_since_ms_ = ctx_->loop->now_ms();
  if (keep_alive_) {
    phase_ = phase::reading;
  } else {
    phase_ = phase::closing;
    close_after_write_ = true;
  }
  if (in_handler_) return;  // the read that dispatched us sends everything at once
  if (ctx_->processing > 0) {
    // Another connection of this loop is being driven (e.g. its handler answered us): send now, but
    // read and process our further requests from a task.
    send_out();
    if (fd_ >= 0 && phase_ == phase::reading) schedule_resume();
    if (fd_ >= 0) refresh_deadline();
    return;
  }
  drive();
}

void connection::schedule_resume() {
  if (resume_scheduled_) return;
  resume_scheduled_ = true;
  ctx_->loop->post([this] {
    resume_scheduled_ = false;
    drive();
  });
}

void connection::send_out() {
  if (fd_ < 0 || phase_ == phase::lingering) return;
  if (!want_write_) write_progress_ms_ = ctx_->loop->now_ms();
  if (h2_ && !h2_->produce(output_high_water)) {
    close_now();
    return;
  }
  while (!out_.empty()) {
    ctx_->sends.add();  // before the call: a peer that sees the bytes also sees the count
    auto n = write_some(out_.data(), out_.size());
    if (n > 0) {
      out_.consume(static_cast<std::size_t>(n));
      write_progress_ms_ = ctx_->loop->now_ms();
      if (on_drain_) notify_drain();
      // HTTP/2: frames wait in nghttp2 (and response bytes in their streams) while the buffer is full.
      if (h2_ && out_.size() < output_high_water / 2 && !h2_->produce(output_high_water)) {
        close_now();
        return;
      }
      continue;
    }
    if (n == io::transport::would_block) {
      want_write_ = true;
      write_blocked_on_read_ = owned_ && owned_->write_needs_readable();
      update_interest();
      refresh_deadline();
      return;
    }
    close_now();  // EPIPE, ECONNRESET, a TLS error: the peer is gone
    return;
  }
  want_write_ = false;
  write_blocked_on_read_ = false;
  if (h2_ && h2_->done()) {
    phase_ = phase::closing;
    close_after_write_ = true;
  }
  if (close_after_write_) start_linger();
}

void connection::update_interest() {
  if (out_registered_) return;
  // Edge-triggered MOD reports EPOLLOUT at once if room appeared meanwhile: no lost wake-up. EPOLLOUT
  // then stays in the set (a spurious edge costs one no-op turn; removing it would cost a syscall).
  out_registered_ = ctx_->loop->modify_fd(fd_, EPOLLIN | EPOLLOUT | EPOLLRDHUP, this);
}

void connection::start_linger() {
  // RFC 9112 9.6: close the write side first and keep reading a little, so unread request bytes do not
  // make the kernel send a reset that destroys the response still in flight. (TLS: close_notify first.)
  if (owned_) {
    owned_->shutdown_write();
  } else {
    tcp_.shutdown_write();
  }
  phase_ = phase::lingering;
  linger_since_ms_ = ctx_->loop->now_ms();
  in_.clear();
  refresh_deadline();
  discard_input();
}

void connection::discard_input() {
  char sink[4096];  // not the loop's scratch: this may run while another connection is processing
  for (int i = 0; i < 64; ++i) {
    auto n = ::recv(fd_, sink, sizeof sink, 0);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close_now();  // end of stream or error
    return;
  }
}

void connection::close_now() {
  if (fd_ < 0) return;
  read_deferred = false;  // a queued read of this connection is void (loop_context::resume_deferred)
  flush_wanted = false;   // and so is a queued flush (loop_context::flush_all)
  ctx_->loop->remove_fd(fd_);
  if (owned_) {
    owned_->close();  // TLS: close_notify if the session is sound, then the session is freed
    owned_.reset();
  }
  ::close(fd_);
  fd_ = -1;
  bool unfinished = phase_ == phase::awaiting || phase_ == phase::streaming;
  if (unfinished && ctx_->opts->observer != nullptr) {
    if (phase_ == phase::awaiting) ex_status_ = 0;  // no response began
    observe_finish();
  }
  if (h2_) {
    // Unfinished streams get their on_close from tasks. The session itself goes in a task too: this
    // close may come from inside one of its calls.
    h2_->closed();
    ctx_->loop->post([s = std::shared_ptr<h2_session>(std::move(h2_))] {});
  }
  ++generation_;  // every exchange handle on this connection is now inert
  std::function<void()> cb = std::move(on_close_);
  on_close_ = nullptr;
  on_drain_ = nullptr;
  release_body();
  in_.clear();
  out_.clear();
  body_.clear();
  in_.release();
  out_.release();
  body_.release();
  deadline_ = 0;
  deadline_kind_ = deadline_kind::none;
  phase_ = phase::reading;
  ctx_->release(this);
  // Deferred so that on_close never runs inside a caller's write()/flush()/respond() on this exchange.
  if (unfinished && cb) ctx_->loop->post(std::move(cb));
}

void connection::observe_dispatch(std::string_view raw) {
  const request_head& head = ctx_->head;
  ex_start_ns_ = read_ns_ != 0 ? read_ns_ : steady_ns();
  ex_head_ns_ = 0;
  ex_status_ = 0;
  ex_bytes_in_ = raw.size();
  ex_bytes_out_ = 0;
  if (ctx_->opts->observer->wants_request_line) {
    ex_method_.assign(head.method_name);
    ex_path_.assign(head.path);  // the path only: a query string may carry a token
  }
}

void connection::observe_finish() {
  const std::uint64_t now = steady_ns();
  exchange_record r;
  r.tag = tag_;
  r.status = ex_status_;
  r.bytes_in = ex_bytes_in_;
  r.bytes_out = ex_bytes_out_;
  r.total_ns = now > ex_start_ns_ ? now - ex_start_ns_ : 0;
  r.head_ns = ex_head_ns_ != 0 && ex_head_ns_ > ex_start_ns_ ? ex_head_ns_ - ex_start_ns_ : r.total_ns;
  r.client = client;
  r.protocol = http10_ ? http_protocol::http1_0 : http_protocol::http1_1;
  r.method = ex_method_;
  r.path = ex_path_;
  ctx_->opts->observer->finished(ctx_->loop->index(), r);
}

void connection::maybe_shrink() {
  if (in_.empty() && in_.capacity() > keep_buffer_bytes) in_.release();
  if (out_.empty() && out_.capacity() > keep_buffer_bytes) out_.release();
  if (body_.empty() && body_.capacity() > keep_buffer_bytes) body_.release();
}

}  // namespace weir::http
