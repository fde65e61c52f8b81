// connection_deadlines: how a connection ends other than by its peer: a graceful drain (node stop), and
// its deadlines (head, body, write, idle; RFC 9112 9.3 leaves them to the server) and what each does
// when it passes, over HTTP/1.1 and HTTP/2 (RFC 9113 6.8: GOAWAY first). The rest of the connection is
// in connection.cc.
#include <algorithm>

#include "http/connection.h"
#include "http/loop_context.h"

namespace weir::http {

void connection::drain() {
  if (fd_ < 0) return;
  if (h2_ && phase_ == phase::reading) {
    // GOAWAY: streams already started finish (within the drain timeout), new ones are refused.
    h2_->shutdown();
    return;
  }
  switch (phase_) {
    case phase::reading:
    case phase::body:
      if (out_.empty()) {
        close_now();
      } else {
        phase_ = phase::closing;
        close_after_write_ = true;
      }
      break;
    case phase::awaiting:
    case phase::streaming:
      keep_alive_ = false;  // the in-flight response completes, then the connection closes
      break;
    case phase::closing:
    case phase::lingering:
      break;
  }
}

void connection::on_timeout() {
  if (h2_) {
    if (deadline_kind_ == deadline_kind::body) {  // the late requests get 408, the others go on
      h2_->expire_incomplete(ctx_->loop->now_ms() - ctx_->opts->body_timeout.count());
      if (fd_ >= 0) refresh_deadline();
      return;
    }
    if (deadline_kind_ == deadline_kind::idle && !h2_->shutting_down()) {
      h2_->shutdown();  // RFC 9113 6.8: GOAWAY before closing an idle connection
      if (fd_ >= 0) refresh_deadline();
      return;
    }
    close_now();  // output that does not move, or an idle connection that did not end after GOAWAY
    return;
  }
  switch (deadline_kind_) {
    case deadline_kind::head:
    case deadline_kind::body:
      if (phase_ == phase::reading || phase_ == phase::body) {
        write_error(408, "request timeout");
        send_out();
        if (fd_ >= 0) refresh_deadline();
        return;
      }
      close_now();
      return;
    case deadline_kind::handshake:  // no TLS session to answer 408 in
    case deadline_kind::idle:
    case deadline_kind::write:
    case deadline_kind::linger:
    case deadline_kind::none:
      close_now();
      return;
  }
}

void connection::refresh_deadline() {
  const auto& o = *ctx_->opts;
  if (phase_ == phase::lingering) {
    deadline_ = linger_since_ms_ + linger_ms;
    deadline_kind_ = deadline_kind::linger;
    return;
  }
  if (want_write_ && !out_.empty()) {
    deadline_ = write_progress_ms_ + o.write_timeout.count();
    deadline_kind_ = deadline_kind::write;
    return;
  }
  if (h2_ && phase_ == phase::reading) {
    if (h2_->stalled_since_ms() != 0) {  // response bytes wait for a window the peer does not open
      deadline_ = h2_->stalled_since_ms() + o.write_timeout.count();
      deadline_kind_ = deadline_kind::write;
    } else if (h2_->idle()) {
      deadline_ = std::max(idle_since_ms_, h2_->idle_since_ms()) + o.idle_timeout.count();
      deadline_kind_ = deadline_kind::idle;
    } else if (std::int64_t started = h2_->oldest_incomplete_ms(); started != 0) {
      deadline_ = started + o.body_timeout.count();  // a request whose head or body stopped coming
      deadline_kind_ = deadline_kind::body;
    } else {
      deadline_ = 0;  // streams open (live tails): each ends on its own terms
      deadline_kind_ = deadline_kind::none;
    }
    return;
  }
  switch (phase_) {
    case phase::reading:
      if (owned_ && !owned_->established()) {
        // A TLS handshake is bounded like a request head: a client that stalls in it holds a session.
        deadline_ = opened_ms_ + o.header_timeout.count();
        deadline_kind_ = deadline_kind::handshake;
      } else if (head_started_ms_ == 0 && in_.empty()) {
        deadline_ = idle_since_ms_ + o.idle_timeout.count();
        deadline_kind_ = deadline_kind::idle;
      } else {
        deadline_ = (head_started_ms_ != 0 ? head_started_ms_ : idle_since_ms_) + o.header_timeout.count();
        deadline_kind_ = deadline_kind::head;
      }
      return;
    case phase::body:
      deadline_ = body_started_ms_ + o.body_timeout.count();
      deadline_kind_ = deadline_kind::body;
      return;
    default:
      deadline_ = 0;
      deadline_kind_ = deadline_kind::none;
      return;
  }
}

}  // namespace weir::http
