#include "http/exchange.h"

#include "http/connection.h"

namespace weir::http {

io::event_loop* exchange::loop() const {
  return loop_;
}

bool exchange::alive() const {
  return conn_ != nullptr && conn_->exchange_alive(generation_);
}

void exchange::respond(int status, std::span<const header> headers, std::string_view body) {
  if (conn_ != nullptr) conn_->respond(generation_, status, headers, body);
}

void exchange::begin_stream(int status, std::span<const header> headers) {
  if (conn_ != nullptr) conn_->begin_stream(generation_, status, headers);
}

void exchange::write(std::string_view data) {
  if (conn_ != nullptr) conn_->write(generation_, data);
}

void exchange::flush() {
  if (conn_ != nullptr) conn_->flush(generation_);
}

void exchange::end() {
  if (conn_ != nullptr) conn_->end(generation_);
}

void exchange::on_close(std::function<void()> fn) {
  if (conn_ != nullptr) conn_->set_on_close(generation_, std::move(fn));
}

std::size_t exchange::buffered_bytes() const {
  return conn_ != nullptr ? conn_->buffered_bytes(generation_) : 0;
}

void exchange::on_drain(std::size_t low_water, std::function<void()> fn) {
  if (conn_ != nullptr) conn_->set_on_drain(generation_, low_water, std::move(fn));
}

void exchange::set_tag(std::uint8_t tag) {
  if (conn_ != nullptr) conn_->set_tag(generation_, tag);
}

}  // namespace weir::http
