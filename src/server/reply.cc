#include "server/reply.h"

#include <vector>

#include "io/event_loop.h"

namespace weir::server {

namespace {
template <class F>
void on_connection_core(const http::exchange& ex, F&& f) {
  io::event_loop* target = ex.loop();
  if (target == nullptr) return;
  if (io::event_loop::current() == target) {
    f();
  } else {
    target->post(std::forward<F>(f));
  }
}

std::vector<http::header> header_views(const protocol::response& r) {
  std::vector<http::header> out;
  out.reserve(r.headers.size());
  for (const auto& [name, value] : r.headers) out.push_back(http::header{name, value});
  return out;
}
}  // namespace

void send_response(http::exchange ex, protocol::response r) {
  on_connection_core(ex, [ex, r = std::move(r)]() mutable {
    auto h = header_views(r);
    ex.respond(r.status, h, r.body);
  });
}

void send_stream_head(http::exchange ex, protocol::response head) {
  on_connection_core(ex, [ex, head = std::move(head)]() mutable {
    auto h = header_views(head);
    ex.begin_stream(head.status, h);
    ex.flush();
  });
}

void send_stream_chunk(http::exchange ex, std::string data, bool end) {
  on_connection_core(ex, [ex, data = std::move(data), end]() mutable {
    if (!data.empty()) ex.write(data);
    if (end) {
      ex.end();
    } else {
      ex.flush();
    }
  });
}

void send_stream_chunk_then(http::exchange ex, std::string data, std::function<void(std::size_t)> written) {
  on_connection_core(ex, [ex, data = std::move(data), written = std::move(written)]() mutable {
    if (!ex.alive()) return;
    if (!data.empty()) {
      ex.write(data);
      ex.flush();
    }
    written(ex.buffered_bytes());
  });
}

}  // namespace weir::server
