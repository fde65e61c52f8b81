#include "server/live_reader.h"

#include "protocol/offset_token.h"
#include "protocol/sse_format.h"
#include "protocol/stream_responses.h"
#include "server/reply.h"
#include "server/stream_shard.h"

namespace weir::server {

namespace {

// A long-poll (PROTOCOL.md 5.7) parked at the tail.
class long_poll final : public live_reader {
 public:
  long_poll(stream_shard& shard, protocol::stream_request req, http::exchange ex, streams::stream_offset at,
            std::uint64_t live_id)
      : shard_(shard), req_(std::move(req)), ex_(ex), at_(at), live_id_(live_id) {}

  void arm() {
    std::weak_ptr<live_reader> weak = weak_from_this();
    timer_ =
        shard_.loop().add_timer(std::chrono::milliseconds(shard_.options().long_poll_timeout_ms), [weak] {
          if (auto self = weak.lock()) static_cast<long_poll*>(self.get())->timeout();
        });
  }

  void wake() override {
    if (done_) return;
    streams::read_result rr = shard_.read_visible(req_.path, at_, shard_.options().read_chunk_bytes);
    if (rr.code != streams::errc::ok) return gone();
    if (rr.plan.bytes > 0) {
      finish(protocol::read_response(rr, req_, shard_.cursor(req_.cursor)));
    } else if (rr.meta->closed) {
      finish(protocol::long_poll_empty(*rr.meta, rr.plan.next, shard_.cursor(req_.cursor)));
    }
  }

  void gone() override {
    if (done_) return;
    finish(protocol::error_response(protocol::status_for(streams::errc::not_found)));
  }

  void stop() override { timeout(); }

  void cancel() override {
    if (done_) return;
    done_ = true;
    shard_.loop().cancel_timer(timer_);
    shard_.remove_reader(req_.path, this, live_id_);
  }

 private:
  void timeout() {
    if (done_) return;
    streams::read_result rr = shard_.read_visible(req_.path, at_, 0);
    if (rr.code != streams::errc::ok) return gone();
    finish(protocol::long_poll_empty(*rr.meta, at_, shard_.cursor(req_.cursor)));
  }

  void finish(protocol::response r) {
    done_ = true;
    shard_.loop().cancel_timer(timer_);
    send_response(ex_, std::move(r));
    shard_.remove_reader(req_.path, this, live_id_);  // may drop the last reference: nothing after this
  }

  stream_shard& shard_;
  protocol::stream_request req_;
  http::exchange ex_;
  streams::stream_offset at_;
  std::uint64_t live_id_;
  io::event_loop::timer_id timer_ = 0;
  bool done_ = false;
};

// An SSE session (PROTOCOL.md 5.8): one data event per read chunk, each followed by a control event.
class sse_session final : public live_reader {
 public:
  sse_session(stream_shard& shard, protocol::stream_request req, http::exchange ex, streams::stream_offset at,
              std::uint64_t live_id)
      : shard_(shard), req_(std::move(req)), ex_(ex), at_(at), live_id_(live_id) {}

  void begin(const streams::stream_meta& meta) {
    base64_ = protocol::sse_needs_base64(meta.content_type);
    send_stream_head(ex_, protocol::sse_head(meta));
    std::weak_ptr<live_reader> weak = weak_from_this();
    lifetime_ =
        shard_.loop().add_timer(std::chrono::milliseconds(shard_.options().sse_close_after_ms), [weak] {
          if (auto self = weak.lock()) static_cast<sse_session*>(self.get())->stop();
        });
    arm_keep_alive();
    pump(true);
  }

  void wake() override { pump(false); }

  void gone() override { end(""); }

  void stop() override { end(""); }

  void cancel() override {
    if (done_) return;
    done_ = true;
    cancel_timers();
    shard_.remove_reader(req_.path, this, live_id_);
  }

 private:
  void arm_keep_alive() {
    std::weak_ptr<live_reader> weak = weak_from_this();
    keep_alive_ =
        shard_.loop().add_timer(std::chrono::milliseconds(shard_.options().sse_keep_alive_ms), [weak] {
          if (auto self = weak.lock()) {
            auto* s = static_cast<sse_session*>(self.get());
            if (s->done_) return;
            send_stream_chunk(s->ex_, std::string(protocol::sse_keep_alive), false);
            s->arm_keep_alive();
          }
        });
  }

  // Sends what the stream has past at_, one data event per read chunk, each followed by a control
  // event. During catch-up it stops after `step_bytes` and waits until the connection has sent most
  // of it (flow control: never queue a whole stream on a slow reader).
  void pump(bool first) {
    if (done_ || awaiting_ack_) return;
    std::string out;
    bool closed_sent = false;
    bool any = false;
    bool more = false;
    while (true) {
      streams::read_result rr = shard_.read_visible(req_.path, at_, shard_.options().read_chunk_bytes);
      if (rr.code != streams::errc::ok) {
        if (!out.empty()) send_stream_chunk(ex_, std::move(out), false);
        return gone();
      }
      const streams::stream_meta& m = *rr.meta;
      const streams::read_plan& p = rr.plan;
      if (p.bytes == 0 && (any || !first) && !(m.closed && p.up_to_date)) break;
      if (p.bytes > 0) {
        std::string body = protocol::read_body(m, p);
        protocol::append_data_event(out, base64_ ? protocol::base64_encode(body) : body);
      }
      protocol::control_fields cf;
      cf.next_offset = protocol::format_offset(p.next);
      cf.up_to_date = p.up_to_date;
      cf.closed = m.closed && p.up_to_date;
      if (!cf.closed) cf.cursor = shard_.cursor(req_.cursor);
      protocol::append_control_event(out, cf);
      at_ = p.next;
      any = true;
      if (cf.closed) {
        closed_sent = true;
        break;
      }
      if (p.up_to_date) break;
      if (out.size() >= step_bytes) {
        more = true;
        break;
      }
    }
    if (closed_sent) return end(std::move(out));  // 5.8: close the connection after streamClosed
    if (more) return send_with_ack(std::move(out));
    if (!out.empty()) send_stream_chunk(ex_, std::move(out), false);
  }

  void send_with_ack(std::string out) {
    awaiting_ack_ = true;
    std::weak_ptr<live_reader> weak = weak_from_this();
    io::event_loop* home = &shard_.loop();
    send_stream_chunk_then(ex_, std::move(out), [weak, home](std::size_t queued) {
      home->post([weak, queued] {
        if (auto self = weak.lock()) static_cast<sse_session*>(self.get())->on_ack(queued);
      });
    });
  }

  void on_ack(std::size_t queued) {
    if (done_) return;
    if (queued > low_water_bytes) {
      // Still draining: look again shortly.
      std::weak_ptr<live_reader> weak = weak_from_this();
      probe_timer_ = shard_.loop().add_timer(std::chrono::milliseconds(5), [weak] {
        if (auto self = weak.lock()) {
          auto* s = static_cast<sse_session*>(self.get());
          s->probe_timer_ = 0;
          if (!s->done_) s->send_with_ack("");
        }
      });
      return;
    }
    awaiting_ack_ = false;
    pump(false);
  }

  void end(std::string last) {
    if (done_) return;
    done_ = true;
    cancel_timers();
    send_stream_chunk(ex_, std::move(last), true);
    shard_.remove_reader(req_.path, this, live_id_);
  }

  void cancel_timers() {
    shard_.loop().cancel_timer(lifetime_);
    shard_.loop().cancel_timer(keep_alive_);
    if (probe_timer_ != 0) shard_.loop().cancel_timer(probe_timer_);
  }

  static constexpr std::size_t step_bytes = 1 << 20;
  static constexpr std::size_t low_water_bytes = 256 * 1024;

  stream_shard& shard_;
  protocol::stream_request req_;
  http::exchange ex_;
  streams::stream_offset at_;
  std::uint64_t live_id_;
  bool base64_ = false;
  bool done_ = false;
  io::event_loop::timer_id lifetime_ = 0;
  io::event_loop::timer_id keep_alive_ = 0;
  io::event_loop::timer_id probe_timer_ = 0;
  bool awaiting_ack_ = false;
};

}  // namespace

std::shared_ptr<live_reader> start_long_poll(stream_shard& shard, protocol::stream_request req,
                                             http::exchange ex, streams::stream_offset at,
                                             std::uint64_t live_id) {
  std::string path = req.path;
  auto r = std::make_shared<long_poll>(shard, std::move(req), ex, at, live_id);
  shard.add_reader(path, r, live_id);
  r->arm();
  return r;
}

std::shared_ptr<live_reader> start_sse(stream_shard& shard, protocol::stream_request req, http::exchange ex,
                                       streams::stream_offset at, std::uint64_t live_id) {
  streams::read_result rr = shard.read_visible(req.path, at, 0);
  if (rr.code != streams::errc::ok) {
    send_response(ex, protocol::error_response(protocol::status_for(rr.code)));
    return nullptr;
  }
  std::string path = req.path;
  auto r = std::make_shared<sse_session>(shard, std::move(req), ex, at, live_id);
  shard.add_reader(path, r, live_id);
  r->begin(*rr.meta);
  return r;
}

}  // namespace weir::server
