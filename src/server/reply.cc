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

// A response's headers as views (stack storage for the usual count), valid while the response is.
class header_views {
 public:
  explicit header_views(const protocol::response& r) {
    if (r.header_count() > inline_.size()) more_.resize(r.header_count());
    http::header* out = more_.empty() ? inline_.data() : more_.data();
    for (std::size_t i = 0; i < r.header_count(); ++i) out[i] = http::header{r.name(i), r.value(i)};
    view_ = std::span<const http::header>(out, r.header_count());
  }
  header_views(const header_views&) = delete;  // view_ may point into inline_
  header_views& operator=(const header_views&) = delete;
  std::span<const http::header> span() const { return view_; }

 private:
  std::array<http::header, 24> inline_;
  std::vector<http::header> more_;
  std::span<const http::header> view_;
};
}  // namespace

void send_response(http::exchange ex, protocol::response r) {
  on_connection_core(
      ex, [ex, r = std::move(r)]() mutable { ex.respond(r.status, header_views(r).span(), r.body); });
}

void send_stream_head(http::exchange ex, protocol::response head) {
  on_connection_core(ex, [ex, head = std::move(head)]() mutable {
    ex.begin_stream(head.status, header_views(head).span());
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

void send_stream_chunk_when_drained(http::exchange ex, std::string data, std::size_t low_water,
                                    std::function<void()> drained) {
  on_connection_core(ex, [ex, data = std::move(data), low_water, drained = std::move(drained)]() mutable {
    if (!ex.alive()) return;
    if (!data.empty()) {
      ex.write(data);
      ex.flush();
    }
    ex.on_drain(low_water, std::move(drained));
  });
}

}  // namespace weir::server
