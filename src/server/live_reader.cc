#include "server/live_reader.h"

#include <algorithm>
#include <optional>

#include "protocol/offset_token.h"
#include "protocol/sse_format.h"
#include "protocol/stream_responses.h"
#include "server/reply.h"
#include "server/stream_shard.h"
#include "tier/hot_tier.h"

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
    // A read in flight answers with what it finds (its plan has data).
    if (done_ || reading_) return;
    streams::read_result rr = shard_.part().read_planned(req_.path, at_, shard_.options().read_chunk_bytes);
    if (rr.code == streams::errc::ok && tier::hot_tier::has_cold(rr.plan)) {
      reading_ = true;
      std::weak_ptr<live_reader> weak = weak_from_this();
      // After the hop the reader may be done (timeout, cancelled, gone): then the answer is dropped.
      shard_.part().read_cold(
          req_.path, std::move(rr),
          [weak](streams::read_result& r, status) {
            if (auto self = weak.lock()) static_cast<long_poll*>(self.get())->answer(r);
          },
          false);
      return;
    }
    answer(rr);
  }

  void answer(streams::read_result& rr) {
    reading_ = false;
    if (done_) return;
    if (rr.code != streams::errc::ok) return gone();
    if (rr.plan.bytes > 0) {
      done_ = true;
      shard_.loop().cancel_timer(timer_);
      send_read_response(ex_, rr, req_, shard_.cursor(req_.cursor), shard_.options().read_chunk_bytes);
      shard_.remove_reader(req_.path, this, live_id_);  // may drop the last reference: nothing after this
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
    streams::read_result rr = shard_.part().read_visible(req_.path, at_, 0);
    if (rr.code != streams::errc::ok) return gone();
    finish(protocol::long_poll_empty(*rr.meta, at_, shard_.cursor(req_.cursor)));
  }

  void finish(protocol::response r) {
    done_ = true;
    shard_.loop().cancel_timer(timer_);
    send_response(ex_, std::move(r), req_.cors);
    shard_.remove_reader(req_.path, this, live_id_);  // may drop the last reference: nothing after this
  }

  stream_shard& shard_;
  protocol::stream_request req_;
  http::exchange ex_;
  streams::stream_offset at_;
  std::uint64_t live_id_;
  io::event_loop::timer_id timer_ = 0;
  bool done_ = false;
  bool reading_ = false;  // a cold read is in flight (stream_shard::read_cold)
};

// One SSE data event and its control event while they are being written: the read they come from
// (its slices reference the stream's immutable chunks: a subscriber holds no copy of the data) and how
// far the event's text got. A record larger than a window (a 16 MiB JSON record) is one event written
// over many windows, never a copy of the whole record per subscriber.
struct pending_event {
  explicit pending_event(bool base64) : data(base64) {}

  // Appends the data event's text until `out` holds `window` bytes; true once the event is complete.
  bool write_data(std::string& out, std::size_t window) {
    if (plan.bytes == 0) return true;  // an event with no data: only the control event
    if (!started) {
      // The id is the offset after this event: a browser that has dispatched it and then lost the
      // connection resumes past it, never before (no event shown twice), even if the control event
      // that follows never arrived.
      protocol::append_event_id(out, protocol::offset_chars(plan.next).view());
      data.begin(out);
      if (json) data.add(out, "[");
      started = true;
    }
    while (slice < plan.slices.size()) {
      if (out.size() >= window) return false;
      std::string_view v = plan.slices[slice].view();
      // JSON: the stored form is "m1,...,mN," and the read form "[m1,...,mN]" (protocol/json_mode.h).
      if (json && slice + 1 == plan.slices.size() && !v.empty() && v.back() == ',') v.remove_suffix(1);
      std::size_t n = std::min(v.size() - pos, piece_bytes);
      data.add(out, v.substr(pos, n));
      pos += n;
      if (pos == v.size()) {
        ++slice;
        pos = 0;
      }
    }
    if (json) data.add(out, "]");
    data.finish(out);
    return true;
  }

  // Raw bytes formatted per step (a line-broken payload can grow up to 6x; base64 4/3).
  static constexpr std::size_t piece_bytes = 8 * 1024;

  streams::read_plan plan;
  bool json = false;
  bool closed = false;  // the stream is closed and this read reaches its end
  protocol::sse_data_writer data;
  bool started = false;
  std::size_t slice = 0;  // the next slice to write
  std::size_t pos = 0;    // bytes of it written
};

// An SSE session (PROTOCOL.md 5.8): one data event per read chunk (for JSON, per record), each followed
// by a control event. Flow control: at most one window of text is in flight to the connection; the
// next is produced when the connection has sent all but `low_water_bytes` (http::exchange::on_drain),
// for catch-up and live data alike. A subscriber that stops reading costs its connection's queue
// (under a window plus the low water) and nothing more; it stays at its offset in the shared log.
class sse_session final : public live_reader {
 public:
  sse_session(stream_shard& shard, protocol::stream_request req, http::exchange ex, streams::stream_offset at,
              std::uint64_t live_id)
      : shard_(shard), req_(std::move(req)), ex_(ex), at_(at), live_id_(live_id) {}

  void begin(const streams::stream_meta& meta) {
    base64_ = protocol::sse_needs_base64(meta.content_type);
    send_stream_head(ex_, protocol::sse_head(meta), req_.cors);
    std::weak_ptr<live_reader> weak = weak_from_this();
    lifetime_ =
        shard_.loop().add_timer(std::chrono::milliseconds(shard_.options().sse_close_after_ms), [weak] {
          if (auto self = weak.lock()) static_cast<sse_session*>(self.get())->expire();
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
            // Never inside an event being written (a comment there would end it), and not needed while
            // data is flowing.
            if (!s->cur_ && !s->waiting_)
              send_stream_chunk(s->ex_, std::string(protocol::sse_keep_alive), false);
            s->arm_keep_alive();
          }
        });
  }

  // The ~60 s lifetime (5.8 connection lifecycle): the client reconnects at the last control event's
  // offset, so an event being written is finished first (it is never cut).
  void expire() {
    if (cur_) {
      expire_after_event_ = true;
      return;
    }
    end("");
  }

  // Writes what the stream has past at_ until a window is full, then waits for the connection to
  // drain (send_window).
  void pump(bool first) {
    // One read at a time: a cold read in flight continues the pump when it is back (on_read).
    if (done_ || waiting_ || reading_) return;
    std::string out;
    // A browser's EventSource reconnects by itself when weir ends the response (the lifetime, a
    // restart): within about a second, at the id of the last event it dispatched (Last-Event-ID).
    if (first) protocol::append_retry(out, sse_retry_ms);
    bool any = false;
    bool finished = false;
    while (out.size() < window_bytes) {
      if (!cur_) {
        streams::read_result rr =
            shard_.part().read_planned(req_.path, at_, shard_.options().read_chunk_bytes);
        if (rr.code != streams::errc::ok) {
          if (!out.empty()) send_stream_chunk(ex_, std::move(out), false);
          return gone();
        }
        if (tier::hot_tier::has_cold(rr.plan)) {
          // Read off the loop; what this pump wrote so far goes out now, the event when it is back.
          reading_ = true;
          std::weak_ptr<live_reader> weak = weak_from_this();
          shard_.part().read_cold(
              req_.path, std::move(rr),
              [weak](streams::read_result& r, status) {
                if (auto self = weak.lock()) static_cast<sse_session*>(self.get())->on_read(r);
              },
              false);
          break;
        }
        // The first pump always sends a control event (upToDate at once for a reader at the tail).
        if (rr.plan.bytes == 0 && (any || !first) && !(rr.meta->closed && rr.plan.up_to_date)) break;
        take(rr);
      }
      if (!cur_->write_data(out, window_bytes)) break;  // the window is full inside the event
      protocol::control_fields cf;
      cf.next_offset = protocol::format_offset(cur_->plan.next);
      cf.up_to_date = cur_->plan.up_to_date;
      cf.closed = cur_->closed;
      if (!cf.closed) cf.cursor = shard_.cursor(req_.cursor);
      protocol::append_event_id(out, cf.next_offset);
      protocol::append_control_event(out, cf);
      at_ = cur_->plan.next;
      any = true;
      const bool up_to_date = cur_->plan.up_to_date;
      cur_.reset();
      if (cf.closed || expire_after_event_) {
        finished = true;  // 5.8: close the connection after streamClosed
        break;
      }
      if (up_to_date) break;
    }
    if (finished) return end(std::move(out));
    if (!out.empty()) send_window(std::move(out));
  }

  // The read becomes the event being written.
  void take(streams::read_result& rr) {
    const streams::stream_meta& m = *rr.meta;
    cur_.emplace(base64_);
    cur_->json = m.json;
    cur_->closed = m.closed && rr.plan.up_to_date;
    cur_->plan = std::move(rr.plan);
  }

  // A cold read is back (on the loop). The session may have ended meanwhile (gone, cancelled, its
  // lifetime over): then it is dropped. Its plan starts at at_: nothing was sent past at_ since.
  void on_read(streams::read_result& rr) {
    reading_ = false;
    if (done_) return;
    if (rr.code != streams::errc::ok) return gone();
    // A read that failed at its first slice (logged) has nothing to send: the next wake tries again.
    if (rr.plan.bytes == 0) return;
    take(rr);
    pump(false);
  }

  void send_window(std::string out) {
    waiting_ = true;
    std::weak_ptr<live_reader> weak = weak_from_this();
    io::event_loop* home = &shard_.loop();
    send_stream_chunk_when_drained(ex_, std::move(out), low_water_bytes, [weak, home] {
      home->post([weak] {
        if (auto self = weak.lock()) static_cast<sse_session*>(self.get())->on_drained();
      });
    });
  }

  void on_drained() {
    if (done_) return;
    waiting_ = false;
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
  }

  // Text handed to the connection per step, and what may still wait there before the next step: a
  // session never queues more than about their sum, well under http::server_options::
  // max_stream_queue_bytes.
  static constexpr std::size_t window_bytes = 32 * 1024;
  static constexpr std::size_t low_water_bytes = 16 * 1024;
  static constexpr unsigned sse_retry_ms = 1000;

  stream_shard& shard_;
  protocol::stream_request req_;
  http::exchange ex_;
  streams::stream_offset at_;
  std::uint64_t live_id_;
  bool base64_ = false;
  bool done_ = false;
  bool waiting_ = false;  // a window is with the connection, not yet drained
  bool reading_ = false;  // a cold read is in flight (stream_shard::read_cold)
  bool expire_after_event_ = false;
  std::optional<pending_event> cur_;
  io::event_loop::timer_id lifetime_ = 0;
  io::event_loop::timer_id keep_alive_ = 0;
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
  streams::read_result rr = shard.part().read_visible(req.path, at, 0);
  if (rr.code != streams::errc::ok) {
    send_response(ex, protocol::error_response(protocol::status_for(rr.code)), req.cors);
    return nullptr;
  }
  std::string path = req.path;
  auto r = std::make_shared<sse_session>(shard, std::move(req), ex, at, live_id);
  shard.add_reader(path, r, live_id);
  r->begin(*rr.meta);
  return r;
}

}  // namespace weir::server
