#include "http/exchange.h"

#include "http/connection.h"
#include "http/h2_session.h"

namespace weir::http {

// An HTTP/2 exchange (stream_ != 0) goes to its connection's h2_session, found by the generation: a
// closed connection (or a reused one) has none, and the handle is inert.
#define WEIR_EXCHANGE_CALL(h1_call, h2_call)                 \
  do {                                                       \
    if (conn_ == nullptr) break;                             \
    if (stream_ == 0) {                                      \
      conn_->h1_call;                                        \
    } else if (h2_session* s = conn_->h2_for(generation_)) { \
      s->h2_call;                                            \
    }                                                        \
  } while (false)

io::event_loop* exchange::loop() const {
  return loop_;
}

bool exchange::alive() const {
  if (conn_ == nullptr) return false;
  if (stream_ == 0) return conn_->exchange_alive(generation_);
  h2_session* s = conn_->h2_for(generation_);
  return s != nullptr && s->alive(stream_);
}

void exchange::respond(int status, std::span<const header> headers, std::string_view body) {
  WEIR_EXCHANGE_CALL(respond(generation_, status, headers, body), respond(stream_, status, headers, body));
}

void exchange::begin_stream(int status, std::span<const header> headers) {
  WEIR_EXCHANGE_CALL(begin_stream(generation_, status, headers), begin_stream(stream_, status, headers));
}

void exchange::write(std::string_view data) {
  WEIR_EXCHANGE_CALL(write(generation_, data), write(stream_, data));
}

void exchange::flush() {
  WEIR_EXCHANGE_CALL(flush(generation_), flush(stream_));
}

void exchange::end() {
  WEIR_EXCHANGE_CALL(end(generation_), end(stream_));
}

void exchange::on_close(std::function<void()> fn) {
  WEIR_EXCHANGE_CALL(set_on_close(generation_, std::move(fn)), set_on_close(stream_, std::move(fn)));
}

std::size_t exchange::buffered_bytes() const {
  if (conn_ == nullptr) return 0;
  if (stream_ == 0) return conn_->buffered_bytes(generation_);
  h2_session* s = conn_->h2_for(generation_);
  return s != nullptr ? s->buffered_bytes(stream_) : 0;
}

void exchange::on_drain(std::size_t low_water, std::function<void()> fn) {
  WEIR_EXCHANGE_CALL(set_on_drain(generation_, low_water, std::move(fn)),
                     set_on_drain(stream_, low_water, std::move(fn)));
}

void exchange::set_tag(std::uint8_t tag) {
  WEIR_EXCHANGE_CALL(set_tag(generation_, tag), set_tag(stream_, tag));
}

#undef WEIR_EXCHANGE_CALL

}  // namespace weir::http
