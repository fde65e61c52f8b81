#include "server/reply.h"

#include <array>
#include <span>
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

// The response's headers as views, in `out` (stack storage for the usual count), valid while `r` is.
std::span<const http::header> header_views(const protocol::response& r, std::array<http::header, 24>& out,
                                           std::vector<http::header>& more) {
  std::span<http::header> v(out.data(), r.header_count());
  if (r.header_count() > out.size()) {
    more.resize(r.header_count());
    v = more;
  }
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = http::header{r.name(i), r.value(i)};
  return v;
}
}  // namespace

void send_response(http::exchange ex, protocol::response r) {
  on_connection_core(ex, [ex, r = std::move(r)]() mutable {
    std::array<http::header, 24> inline_views;
    std::vector<http::header> more;
    ex.respond(r.status, header_views(r, inline_views, more), r.body);
  });
}

void send_stream_head(http::exchange ex, protocol::response head) {
  on_connection_core(ex, [ex, head = std::move(head)]() mutable {
    std::array<http::header, 24> inline_views;
    std::vector<http::header> more;
    ex.begin_stream(head.status, header_views(head, inline_views, more));
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
