#include "server/reply.h"

#include <algorithm>
#include <array>
#include <memory>
#include <span>
#include <vector>

#include "io/event_loop.h"
#include "protocol/stream_responses.h"

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
// The body of a large read, written on the connection's core from the plan's shared chunks: one window
// per step, the next once the connection has sent all but the low water (exchange::on_drain). Its bytes
// are those of protocol::read_body (JSON: "[m1,...,mN]" from the stored "m1,...,mN,").
class read_body_writer : public std::enable_shared_from_this<read_body_writer> {
 public:
  read_body_writer(http::exchange ex, streams::read_plan plan, bool json)
      : ex_(ex), plan_(std::move(plan)), json_(json) {}

  void pump() {
    if (!ex_.alive()) return;  // the client went away: the chunks are let go with this object
    std::string out;
    if (json_ && !opened_) {
      out += '[';
      opened_ = true;
    }
    while (slice_ < plan_.slices.size() && out.size() < window_bytes) {
      std::string_view v = plan_.slices[slice_].view();
      if (json_ && slice_ + 1 == plan_.slices.size() && !v.empty() && v.back() == ',') v.remove_suffix(1);
      std::size_t n = std::min(v.size() - pos_, window_bytes - out.size());
      out.append(v.substr(pos_, n));
      pos_ += n;
      if (pos_ == v.size()) {
        ++slice_;
        pos_ = 0;
      }
    }
    const bool last = slice_ == plan_.slices.size();
    if (last && json_) out += ']';
    ex_.write(out);
    if (last) {
      ex_.end();
      return;
    }
    ex_.flush();
    ex_.on_drain(low_water_bytes, [self = shared_from_this()] { self->pump(); });
  }

 private:
  static constexpr std::size_t window_bytes = 32 * 1024;
  static constexpr std::size_t low_water_bytes = 16 * 1024;

  http::exchange ex_;
  streams::read_plan plan_;
  bool json_;
  bool opened_ = false;
  std::size_t slice_ = 0;
  std::size_t pos_ = 0;
};

}  // namespace

void send_read_response(http::exchange ex, const streams::read_result& rr,
                        const protocol::stream_request& req, std::optional<std::string> cursor,
                        std::size_t inline_up_to) {
  if (rr.code != streams::errc::ok || rr.plan.bytes <= inline_up_to) {
    send_response(ex, protocol::read_response(rr, req, std::move(cursor)), req.cors);
    return;
  }
  // The head as read_response makes it (ETag, offsets, closure), without building the body.
  streams::read_result head_only;
  head_only.meta = rr.meta;
  head_only.plan.next = rr.plan.next;
  head_only.plan.up_to_date = rr.plan.up_to_date;
  protocol::response head = protocol::read_response(head_only, req, std::move(cursor));
  if (head.status != 200) {
    send_response(ex, std::move(head), req.cors);  // 304: no body
    return;
  }
  protocol::add_cors_headers(head, req.cors);
  auto body = std::make_shared<read_body_writer>(ex, rr.plan, rr.meta->json);
  on_connection_core(ex, [ex, head = std::move(head), body]() mutable {
    ex.begin_stream(head.status, header_views(head).span());
    body->pump();
  });
}

void send_response(http::exchange ex, protocol::response r, const protocol::cors_grant& cors) {
  protocol::add_cors_headers(r, cors);
  on_connection_core(
      ex, [ex, r = std::move(r)]() mutable { ex.respond(r.status, header_views(r).span(), r.body); });
}

void send_stream_head(http::exchange ex, protocol::response head, const protocol::cors_grant& cors) {
  protocol::add_cors_headers(head, cors);
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
