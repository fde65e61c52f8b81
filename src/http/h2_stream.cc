#include "http/h2_stream.h"

#include <memory>
#include <utility>

namespace weir::http {

namespace {
// Closed streams of every session of this thread (a loop's), reset, for the next streams opened on it:
// one allocation fewer per stream, field list, span array and response body. Per thread, not per
// session, so that a client that had 100 requests in flight reuses 100 while an idle connection holds
// none; bounded in count and in the room each keeps (at most about 4 MiB a thread).
constexpr std::size_t max_spare_streams = 512;
thread_local std::vector<std::unique_ptr<h2_session::stream>> spare_streams;
}  // namespace

std::unique_ptr<h2_session::stream> h2_session::new_stream() {
  if (spare_streams.empty()) return std::make_unique<stream>();
  std::unique_ptr<stream> s = std::move(spare_streams.back());
  spare_streams.pop_back();
  return s;
}

void h2_session::recycle(std::unique_ptr<stream> s) {
  if (spare_streams.size() >= max_spare_streams) return;
  static_cast<h2_stream_state&>(*s) = h2_stream_state{};
  s->fields.clear();
  if (s->fields.capacity() > keep_fields_bytes) {
    s->fields.release();
    s->spans = std::vector<h2_field_span>();
  } else {
    s->spans.clear();
  }
  s->body.clear();
  if (s->body.capacity() > keep_out_bytes) s->body.release();
  s->out.clear();
  if (s->out.capacity() > keep_out_bytes) s->out.release();
  if (s->on_close) s->on_close = nullptr;
  if (s->on_drain) s->on_drain = nullptr;
  s->method.clear();
  s->path.clear();
  if (s->head.capacity() <= keep_fields_bytes) {
    s->head.clear();
  } else {
    s->head = std::string();
  }
  spare_streams.push_back(std::move(s));
}

}  // namespace weir::http
