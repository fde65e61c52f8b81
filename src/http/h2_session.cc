#include "http/h2_session.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "base/assert.h"
#include "http/body_budget.h"
#include "http/connection.h"
#include "http/h2_alloc.h"
#include "http/h2_stream.h"
#include "http/loop_context.h"
#include "http/status_text.h"

namespace weir::http {

namespace {

std::uint64_t steady_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// Empty DATA frames without END_STREAM carry nothing and cost a callback each: beyond this many on one
// connection the peer is flooding (the empty-frame flood, CVE-2019-9518).
constexpr std::uint32_t max_empty_data_frames = 1024;
// Rapid reset (CVE-2023-44487): every RST_STREAM from the client takes a token; a bucket of this many,
// refilled at this rate per second, is what a browser closing its tails never exhausts. nghttp2's own
// limiter (the same idea, answering INTERNAL_ERROR) is set above it as a backstop.
constexpr std::uint32_t reset_burst = 1000;
constexpr std::uint32_t resets_per_second = 33;

// RFC 9113 8.2.2: connection-specific fields are malformed in HTTP/2; a handler's header list may hold
// them (it was written for HTTP/1.1), so they are left out.
bool connection_specific(std::string_view name) {
  switch (name.size()) {
    case 7:
      return ascii_iequals(name, "upgrade");
    case 10:
      return ascii_iequals(name, "connection") || ascii_iequals(name, "keep-alive");
    case 16:
      return ascii_iequals(name, "proxy-connection");
    case 17:
      return ascii_iequals(name, "transfer-encoding");
    default:
      return false;
  }
}

// RFC 9113 8.2.1: field names in lowercase. Eight bytes at a time (two overlapping words for names of 8 to
// 16 bytes, most of them): a byte gets 0x20 added if it is 'A'..'Z'. Bytes >= 0x80 are left as they are.
void write_lower(char* out, std::string_view name) {
  auto word = [](std::uint64_t w) {
    constexpr std::uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    const std::uint64_t low7 = w & ~high;
    // High bit of each byte: at least 'A' (0x41), and above 'Z' (0x5a), among the ASCII bytes.
    const std::uint64_t ge_a = low7 + ones * (0x80 - 'A');
    const std::uint64_t gt_z = low7 + ones * (0x80 - 'Z' - 1);
    const std::uint64_t upper = ge_a & ~gt_z & ~w & high;
    return w | (upper >> 2);
  };
  const std::size_t n = name.size();
  if (n >= 8 && n <= 16) {
    std::uint64_t a, b;
    std::memcpy(&a, name.data(), 8);
    std::memcpy(&b, name.data() + n - 8, 8);
    a = word(a);
    b = word(b);
    std::memcpy(out, &a, 8);
    std::memcpy(out + n - 8, &b, 8);
    return;
  }
  for (char c : name) *out++ = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool has_header(std::span<const header> headers, std::string_view name) {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const header& h) { return ascii_iequals(h.name, name); });
}

h2_session* self(void* user_data) {
  return static_cast<h2_session*>(user_data);
}

std::string_view sv(const std::uint8_t* p, std::size_t n) {
  return {reinterpret_cast<const char*>(p), n};
}

int begin_headers_cb(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  return self(user_data)->on_begin_headers(frame->hd.stream_id);
}

int header_cb(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t namelen,
              const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user_data) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  return self(user_data)->on_header(frame->hd.stream_id, sv(name, namelen), sv(value, valuelen));
}

int data_chunk_cb(nghttp2_session*, std::uint8_t, std::int32_t stream_id, const std::uint8_t* data,
                  std::size_t len, void* user_data) {
  return self(user_data)->on_data(stream_id, sv(data, len));
}

int frame_recv_cb(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  return self(user_data)->on_frame_recv(frame->hd.stream_id, frame->hd.type, frame->hd.flags,
                                        frame->hd.length);
}

int frame_send_cb(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
  return self(user_data)->on_frame_send(frame->hd.stream_id, frame->hd.type, frame->hd.flags);
}

int stream_close_cb(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code, void* user_data) {
  return self(user_data)->on_stream_close(stream_id, error_code);
}

ssize_t read_data_cb(nghttp2_session*, std::int32_t stream_id, std::uint8_t*, std::size_t length,
                     std::uint32_t* data_flags, nghttp2_data_source*, void* user_data) {
  return self(user_data)->on_read_data(stream_id, length, data_flags);
}

int send_data_cb(nghttp2_session*, nghttp2_frame* frame, const std::uint8_t* framehd, std::size_t length,
                 nghttp2_data_source*, void* user_data) {
  return self(user_data)->on_send_data(frame->hd.stream_id, framehd, length);
}

ssize_t send_cb(nghttp2_session*, const std::uint8_t* data, std::size_t length, int, void* user_data) {
  return self(user_data)->on_send(data, length);
}

}  // namespace

h2_session::h2_session(loop_context& ctx, connection& conn, io::byte_buffer& out)
    : ctx_(&ctx), conn_(&conn), out_(&out) {
  nghttp2_session_callbacks* cbs = nullptr;
  WEIR_ASSERT(nghttp2_session_callbacks_new(&cbs) == 0, "nghttp2_session_callbacks_new failed");
  nghttp2_session_callbacks_set_send_callback(cbs, send_cb);
  nghttp2_session_callbacks_set_send_data_callback(cbs, send_data_cb);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, begin_headers_cb);
  nghttp2_session_callbacks_set_on_header_callback(cbs, header_cb);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, data_chunk_cb);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, frame_recv_cb);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, frame_send_cb);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, stream_close_cb);

  const h2_options& o = ctx.opts->h2;
  nghttp2_option* opt = nullptr;
  WEIR_ASSERT(nghttp2_option_new(&opt) == 0, "nghttp2_option_new failed");
  // The known attacks, bounded by nghttp2 itself (docs/http2.md, "Hardening"): unanswered control frames
  // (SETTINGS/PING floods), CONTINUATION floods, rapid reset (CVE-2023-44487).
  nghttp2_option_set_max_outbound_ack(opt, 1000);
  nghttp2_option_set_max_settings(opt, 32);
  nghttp2_option_set_max_continuations(opt, 8);
  nghttp2_option_set_stream_reset_rate_limit(opt, 2 * reset_burst, 2 * resets_per_second);
  nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
  // No RFC 7540 priority tree (SETTINGS_NO_RFC7540_PRIORITIES below; RFC 9113 5.3.2 deprecates it), so
  // closed streams need not be kept for it: less bookkeeping per request.
  nghttp2_option_set_no_closed_streams(opt, 1);
  // Requests are checked by h2_request_check as their fields arrive (the same rules as nghttp2's HTTP
  // messaging checks, in one pass instead of a second one per field).
  nghttp2_option_set_no_http_messaging(opt, 1);
  int rv = nghttp2_session_server_new3(&session_, cbs, this, opt, h2_mem());
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  WEIR_ASSERT(rv == 0, "nghttp2_session_server_new3: {}", nghttp2_strerror(rv));

  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, o.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, o.stream_window_bytes},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, o.max_header_list_bytes},
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                        static_cast<std::int32_t>(o.connection_window_bytes));
  idle_since_ms_ = ctx.loop->now_ms();
  reset_tokens_ms_ = idle_since_ms_;
  reset_tokens_ = reset_burst;
  ctx.h2_sessions.add();
}

h2_session::~h2_session() {
  closed();
  nghttp2_session_del(session_);
}

void h2_session::check_thread() const {
  auto* cur = io::event_loop::current();
  WEIR_ASSERT(cur == nullptr || cur == ctx_->loop, "h2 exchange used off its core: loop {} for loop {}",
              cur ? static_cast<int>(cur->index()) : -1, ctx_->loop->index());
}

h2_session::stream* h2_session::find(std::int32_t id) const {
  // nghttp2 calls back for one stream several times in a row (begin headers, each field, the frame).
  if (last_ != nullptr && last_->id == id) return last_;
  stream* s = streams_.find(id);
  if (s != nullptr) last_ = s;
  return s;
}

void h2_session::receive(std::string_view data) {
  if (closed_ || failed_) return;
  send_wanted_ = true;  // acknowledgements, window updates, resets and answers from the handlers
  in_callbacks_ = true;
  auto rv =
      nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
  in_callbacks_ = false;
  if (rv < 0) {
    // A fatal error (a bad preface, a flood nghttp2 detected): a GOAWAY may still be queued, then close.
    failed_ = true;
    if (rv != NGHTTP2_ERR_BAD_CLIENT_MAGIC)
      nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
  }
}

bool h2_session::produce(std::size_t high_water) {
  if (closed_ || in_callbacks_) return !closed_;
  if (!send_wanted_) {
    // The last send ran dry and nothing was queued since: nghttp2 has nothing to frame (a connection
    // asks again after each write of its buffer). Whether a response now waits on the peer's window
    // may have changed with that write.
    update_stall();
    return true;
  }
  high_water_ = high_water;
  send_full_ = false;
  send_wanted_ = false;  // a frame queued from a callback during the send sets it again
  in_callbacks_ = true;
  int rv = nghttp2_session_send(session_);
  in_callbacks_ = false;
  if (send_full_) send_wanted_ = true;  // stopped at the high-water mark: frames wait for room
  if (rv != 0) failed_ = true;
  update_stall();
  return rv == 0;
}

std::int64_t h2_session::oldest_incomplete_ms() const {
  std::int64_t oldest = 0;
  streams_.for_each([&](const stream& s) {
    if (s.request_complete || s.refused || s.dispatched) return;
    if (oldest == 0 || s.opened_ms < oldest) oldest = s.opened_ms;
  });
  return oldest;
}

void h2_session::expire_incomplete(std::int64_t cutoff_ms) {
  streams_.for_each([&](stream& s) {
    if (!s.request_complete && !s.refused && s.opened_ms <= cutoff_ms) answer(s, 408, "request timeout");
  });
  kick();
}

bool h2_session::done() const {
  return closed_ || failed_ ||
         (!nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_));
}

void h2_session::shutdown() {
  if (closed_ || failed_ || shutting_down_) return;
  shutting_down_ = true;
  send_wanted_ = true;
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_),
                        NGHTTP2_NO_ERROR, nullptr, 0);
  kick();
}

void h2_session::calm_down() {
  if (calm_) return;
  calm_ = true;  // no stream opened from now on reaches the handler
  send_wanted_ = true;
  nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
}

bool h2_session::take_reset_token() {
  const std::int64_t now = ctx_->loop->now_ms();
  const auto refill = static_cast<std::uint64_t>(now - reset_tokens_ms_) * resets_per_second / 1000;
  if (refill > 0) {
    reset_tokens_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(reset_burst, reset_tokens_ + refill));
    reset_tokens_ms_ = now;
  }
  if (reset_tokens_ == 0) return false;
  --reset_tokens_;
  return true;
}

void h2_session::closed() {
  if (closed_) return;
  closed_ = true;
  streams_.for_each([&](stream& s) {
    ctx_->bodies->release(s.body_reserved);
    s.body_reserved = 0;
    if (s.dispatched && !s.finished) {
      if (ctx_->opts->observer != nullptr) observe_finish(s);
      if (s.on_close) ctx_->loop->post(std::move(s.on_close));
    }
  });
  last_ = nullptr;
  streams_.clear();
}

void h2_session::kick() {
  if (in_callbacks_ || closed_) return;
  conn_->h2_send();  // last: it may close the connection (and this h2_session object with it)
}

// --- receiving -------------------------------------------------------------------------------------

int h2_session::on_begin_headers(std::int32_t id) {
  if (calm_) return 0;
  std::unique_ptr<stream> s = new_stream();
  s->id = id;
  s->opened_ms = ctx_->loop->now_ms();
  if (ctx_->opts->observer != nullptr) s->start_ns = steady_ns();
  streams_.insert(std::move(s));
  ctx_->h2_streams.add();
  return 0;
}

int h2_session::on_header(std::int32_t id, std::string_view name, std::string_view value) {
  stream* s = find(id);
  if (s == nullptr || s->malformed) return 0;
  h2_request_check::pseudo slot = h2_request_check::none;
  const auto verdict = s->check.field(name, value, s->headers_done, slot);
  if (verdict == h2_request_check::verdict::malformed) {
    malformed(*s);
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // the rest of the block is decoded, not delivered
  }
  if (s->headers_done) return 0;  // trailers are checked, then ignored
  s->list_bytes += name.size() + value.size() + 32;
  s->bytes_in += name.size() + value.size() + 4;
  if (s->list_bytes > ctx_->opts->h2.max_header_list_bytes || s->spans.size() >= max_headers) {
    s->head_too_large = true;  // answered 431 once the header block is complete; nothing more kept
  }
  if (s->head_too_large) return 0;
  if (slot != h2_request_check::none) {
    s->pseudo[slot][0] = s->keep(value, {});
    s->pseudo[slot][1] = static_cast<std::uint32_t>(value.size());
    return 0;
  }
  s->spans.push_back(h2_field_span{s->keep(name, value), static_cast<std::uint32_t>(name.size()),
                                   static_cast<std::uint32_t>(value.size())});
  if (name.size() == 6 && name[0] == 'e' && name == "expect" && ascii_iequals(value, "100-continue"))
    s->expect_continue = true;
  return 0;
}

void h2_session::malformed(stream& s) {
  s.malformed = true;
  send_wanted_ = true;
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_PROTOCOL_ERROR);
}

int h2_session::on_data(std::int32_t id, std::string_view data) {
  stream* s = find(id);
  if (s == nullptr || s->malformed) return 0;
  if (!s->check.data(data.size())) {
    malformed(*s);  // more DATA than its content-length
    return 0;
  }
  if (s->refused || s->dispatched) return 0;
  s->bytes_in += data.size();
  const std::uint64_t max_body = ctx_->opts->limits.max_body_bytes;
  if (s->body.size() + data.size() > max_body) {
    answer(*s, 413, "request body too large");
    return 0;
  }
  std::size_t total = s->body.size() + data.size();
  if (total > s->body_reserved) {
    // Like a chunked HTTP/1.1 body: the budget is taken in steps as the body grows.
    std::size_t want =
        (total - s->body_reserved + body_budget_step - 1) / body_budget_step * body_budget_step;
    if (!ctx_->bodies->try_reserve(want)) {
      ctx_->bodies_refused.add();
      answer(*s, 503, "too many request bodies in flight; retry later", true);
      return 0;
    }
    s->body_reserved += want;
  }
  s->body.append(data);
  return 0;
}

int h2_session::on_frame_recv(std::int32_t id, std::uint8_t type, std::uint8_t flags, std::size_t length) {
  if (type == NGHTTP2_DATA && length == 0 && !(flags & NGHTTP2_FLAG_END_STREAM) &&
      ++empty_data_frames_ > max_empty_data_frames) {
    calm_down();
    return 0;
  }
  if (type == NGHTTP2_RST_STREAM && !take_reset_token()) {
    calm_down();
    return 0;
  }
  if (type != NGHTTP2_HEADERS && type != NGHTTP2_DATA) return 0;
  stream* s = find(id);
  if (s == nullptr || s->malformed) return 0;
  const bool end_stream = (flags & NGHTTP2_FLAG_END_STREAM) != 0;
  // RFC 9113 8.1: the request's header block needs its pseudo-header fields; trailers end the stream;
  // the body is as long as its content-length says.
  if (type == NGHTTP2_HEADERS && (s->headers_done ? !end_stream : !s->check.head_complete())) {
    malformed(*s);
    return 0;
  }
  if (end_stream && !s->check.end_stream()) {
    malformed(*s);
    return 0;
  }
  if (type == NGHTTP2_HEADERS && !s->headers_done) {
    s->headers_done = true;
    if (s->head_too_large) {
      answer(*s, 431, "request header fields too large");
      return 0;
    }
    if (s->check.has_content_length() && s->check.content_length() > ctx_->opts->limits.max_body_bytes) {
      answer(*s, 413, "request body too large");
      return 0;
    }
    if (!end_stream && s->check.has_content_length() && s->check.content_length() == 0) {
      // RFC 9113 8.1.1: content-length 0 declares the body empty (DATA bytes would be malformed), so
      // the request is complete without END_STREAM; some clients (undici) send that only much later.
      // The answer is followed by RST_STREAM NO_ERROR (on_frame_send) if the stream is still open.
      dispatch(*s);
      return 0;
    }
    if (!end_stream && s->expect_continue) {
      // RFC 9110 10.1.1: the client waits for this before sending its body.
      static const nghttp2_nv cont[] = {
          {(std::uint8_t*)":status", (std::uint8_t*)"100", 7, 3, NGHTTP2_NV_FLAG_NONE}};
      send_wanted_ = true;
      nghttp2_submit_headers(session_, NGHTTP2_FLAG_NONE, id, nullptr, cont, 1, nullptr);
    }
  }
  if (!end_stream) return 0;
  s->request_complete = true;
  if (!s->refused && !s->dispatched) dispatch(*s);
  return 0;
}

int h2_session::on_frame_send(std::int32_t id, std::uint8_t type, std::uint8_t flags) {
  if ((type != NGHTTP2_HEADERS && type != NGHTTP2_DATA) || !(flags & NGHTTP2_FLAG_END_STREAM)) return 0;
  stream* s = find(id);
  // RFC 9113 8.1: a response that ends before its request does is followed by RST_STREAM (NO_ERROR), so
  // that the client stops sending a body nobody reads.
  if (s != nullptr && !s->request_complete) {
    send_wanted_ = true;
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_NO_ERROR);
  }
  return 0;
}

int h2_session::on_stream_close(std::int32_t id, std::uint32_t) {
  std::unique_ptr<stream> done = streams_.take(id);
  if (!done) return 0;
  stream& s = *done;
  ctx_->bodies->release(s.body_reserved);
  if (s.dispatched && !s.finished) {
    // The client reset the stream (or the connection is going): the exchange ends unfinished.
    if (ctx_->opts->observer != nullptr) observe_finish(s);
    if (s.on_close) ctx_->loop->post(std::move(s.on_close));
  }
  if (!s.dropped) queued_bytes_ -= s.out.size();
  if (last_ == &s) last_ = nullptr;
  if (streams_.empty()) idle_since_ms_ = ctx_->loop->now_ms();
  recycle(std::move(done));
  return 0;
}

void h2_session::dispatch(stream& s) {
  request_head& head = ctx_->head;
  head.reset();
  head.method_name = s.at(s.pseudo[0]);
  head.method = method_from_token(head.method_name);
  head.target = s.at(s.pseudo[1]);
  auto q = head.target.find('?');
  head.path = head.target.substr(0, q);
  if (q != std::string_view::npos) head.query = head.target.substr(q + 1);
  head.version_minor = 1;
  head.keep_alive = true;
  const char* fields = s.fields.data();
  bool has_host = false;
  for (const h2_field_span& f : s.spans) {
    if (head.header_count == max_headers) break;
    header& h = head.headers[head.header_count++];
    h.name = std::string_view(fields + f.offset, f.name_size);
    h.value = std::string_view(fields + f.offset + f.name_size, f.value_size);
    has_host = has_host || h.name == "host";
  }
  // RFC 9113 8.3.1: :authority stands for Host; handlers read Host.
  if (!has_host && s.pseudo[2][1] != 0 && head.header_count < max_headers) {
    head.headers[head.header_count++] = header{"host", s.at(s.pseudo[2])};
  }
  if (s.spans.size() > max_headers) {
    answer(s, 431, "too many header fields");
    return;
  }
  head.framing = s.body.empty() ? body_framing::none : body_framing::content_length;
  head.content_length = s.body.size();
  s.dispatched = true;
  s.is_head = head.method == method::head;
  ctx_->bodies->release(s.body_reserved);  // the handler copies what it keeps of the body
  s.body_reserved = 0;
  if (ctx_->opts->observer != nullptr && ctx_->opts->observer->wants_request_line) {
    s.method.assign(head.method_name);
    s.path.assign(head.path);
  }
  ctx_->requests.add();
  exchange ex;
  ex.loop_ = ctx_->loop;
  ex.conn_ = conn_;
  ex.generation_ = conn_->generation();
  ex.stream_ = s.id;
  request req{&head, s.body.view()};
  (*ctx_->on_request)(req, ex);
  // The stream may be gone now (the handler answered and nothing is left to send is not possible inside
  // the callbacks, but a handler may have reset it): look it up again before touching it.
  if (stream* again = find(ex.stream_); again != nullptr) {
    again->body.clear();
    if (again->body.capacity() > keep_out_bytes) again->body.release();
  }
}

// The engine's own answer to a request it will not hand over (413, 431, 503): the body that follows is
// dropped, and the stream is reset once the answer is out (on_frame_send).
void h2_session::answer(stream& s, int status, std::string_view reason, bool retry_after) {
  if (s.dispatched || s.refused) return;
  s.refused = true;
  ctx_->bodies->release(s.body_reserved);
  s.body_reserved = 0;
  s.body.clear();
  s.dispatched = true;  // an exchange nobody holds: reported with tag 0
  s.finished = true;
  static constexpr header type[] = {{"content-type", "text/plain"}, {"retry-after", "1"}};
  std::string text(reason);
  text += '\n';
  s.out.append(text);
  queued(s, text.size());
  s.eof = true;
  s.body_allowed = true;
  s.status = status;
  submit(s, status, std::span<const header>(type, retry_after ? 2 : 1), true, text.size(), true);
  if (ctx_->opts->observer != nullptr) {
    s.bytes_out = text.size();
    observe_finish(s);
  }
}

// --- responding ------------------------------------------------------------------------------------

namespace {
// "100" to "999", three characters each: a status code that outlives any HEADERS frame.
constexpr std::array<char, 3000> status_codes = [] {
  std::array<char, 3000> a{};
  for (int i = 0; i < 1000; ++i) {
    a[3 * i] = static_cast<char>('0' + i / 100);
    a[3 * i + 1] = static_cast<char>('0' + i / 10 % 10);
    a[3 * i + 2] = static_cast<char>('0' + i % 10);
  }
  return a;
}();
}  // namespace

void h2_session::submit(stream& s, int status, std::span<const header> headers, bool add_length,
                        std::uint64_t content_length, bool with_body) {
  if (status < 100 || status > 999) status = 500;
  char length[20];
  const auto length_size =
      static_cast<std::size_t>(std::to_chars(length, length + sizeof length, content_length).ptr - length);
  const std::string_view date = ctx_->date.value();
  // nghttp2 reads the fields only when it frames the HEADERS, which may be a later loop turn (the
  // output buffer full): every name and value handed over with NO_COPY lives at least as long as the
  // stream. Constant ones (names written here, the status code, the server name) are used in place;
  // the rest (the handler's fields, names in lowercase as RFC 9113 8.2.1 wants them, the date, the
  // length) are written into the stream's `head`, sized first so that it does not move while filled.
  // nghttp2 would otherwise copy and lowercase every field itself. A second HEADERS on one stream
  // (none is sent today) is copied by nghttp2, as the first one's bytes may still wait in `head`.
  const bool own = s.head.empty();
  std::size_t bytes = date.size() + length_size;
  for (const auto& h : headers) bytes += h.name.size() + h.value.size();
  constexpr std::uint8_t keep = NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE;
  const std::uint8_t copied = own ? keep : std::uint8_t{NGHTTP2_NV_FLAG_NONE};
  std::string lower_copy;  // the names when `head` cannot be used
  std::string& store = own ? s.head : lower_copy;
  store.resize(bytes);
  char* w = store.data();  // never beyond the `bytes` counted above
  constexpr std::size_t stack_fields = 24;
  nghttp2_nv nva_stack[stack_fields];
  std::vector<nghttp2_nv> nva_heap;
  nghttp2_nv* nva = nva_stack;
  if (headers.size() + 4 > stack_fields) {
    nva_heap.resize(headers.size() + 4);
    nva = nva_heap.data();
  }
  std::size_t fields = 0;
  auto add = [&](std::string_view n, std::string_view v, std::uint8_t flags) {
    nva[fields++] =
        nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(n.data())),
                   reinterpret_cast<std::uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(), flags};
  };
  auto put = [&](std::string_view v) {
    if (!own) return v;  // nghttp2 copies it
    if (!v.empty()) std::memcpy(w, v.data(), v.size());
    w += v.size();
    return std::string_view(w - v.size(), v.size());
  };
  add(":status", std::string_view(&status_codes[3 * static_cast<std::size_t>(status)], 3), keep);
  add("server", ctx_->opts->server_name, keep);
  add("date", put(date), copied);
  for (const auto& h : headers) {
    if (connection_specific(h.name)) continue;
    char* name = w;
    write_lower(w, h.name);
    w += h.name.size();
    add(std::string_view(name, h.name.size()), put(h.value), copied);
  }
  if (add_length) add("content-length", put(std::string_view(length, length_size)), copied);
  nghttp2_data_provider provider{};
  provider.read_callback = read_data_cb;
  send_wanted_ = true;
  int rv = nghttp2_submit_response(session_, s.id, nva, fields, with_body ? &provider : nullptr);
  if (rv != 0) nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
}

bool h2_session::alive(std::int32_t id) const {
  const stream* s = closed_ ? nullptr : find(id);
  return s != nullptr && s->dispatched && !s->finished;
}

void h2_session::respond(std::int32_t id, int status, std::span<const header> headers,
                         std::string_view body) {
  check_thread();
  stream* s = closed_ ? nullptr : find(id);
  if (s == nullptr || !s->dispatched || s->finished || s->status != 0) return;
  s->finished = true;
  s->status = status;
  bool has_body = status_has_body(status);
  bool add_length = has_body && !has_header(headers, "content-length");
  bool send_body = has_body && !s->is_head && !body.empty();
  if (send_body) {
    s->out.append(body);
    s->eof = true;
    s->body_allowed = true;
  }
  submit(*s, status, headers, add_length, body.size(), send_body);
  if (send_body) queued(*s, body.size());
  if (ctx_->opts->observer != nullptr) {
    s->bytes_out = send_body ? body.size() : 0;
    observe_finish(*s);
  }
  kick();
}

void h2_session::begin_stream(std::int32_t id, int status, std::span<const header> headers) {
  check_thread();
  stream* s = closed_ ? nullptr : find(id);
  if (s == nullptr || !s->dispatched || s->finished || s->status != 0) return;
  s->status = status;
  s->body_allowed = status_has_body(status) && !s->is_head;
  if (ctx_->opts->observer != nullptr) s->head_ns = steady_ns();
  // Always with a data source, deferred until there are bytes or the end: the HEADERS frame goes now,
  // END_STREAM comes with end().
  submit(*s, status, headers, false, 0, true);
}

void h2_session::write(std::int32_t id, std::string_view data) {
  check_thread();
  stream* s = closed_ ? nullptr : find(id);
  if (s == nullptr || s->finished || s->status == 0 || !s->body_allowed || data.empty() || s->dropped) return;
  s->out.append(data);
  s->bytes_out += data.size();
  send_wanted_ = true;
  nghttp2_session_resume_data(session_, id);
  const std::size_t queue_limit = ctx_->opts->max_stream_queue_bytes;
  if (queue_limit != 0 && s->out.size() > queue_limit) {
    // This stream's reader does not keep up (its window stays closed): drop it, not the connection.
    queued_bytes_ += data.size();
    drop(*s);
    return;
  }
  queued(*s, data.size());
}

void h2_session::queued(stream& s, std::size_t n) {
  queued_bytes_ += n;
  const std::size_t budget = ctx_->opts->h2.connection_queue_bytes;
  while (budget != 0 && queued_bytes_ > budget) {
    // The streams holding most are the ones whose readers lag furthest: they go, the others stay.
    stream* most = &s;
    streams_.for_each([&](stream& o) {
      if (!o.dropped && o.out.size() > most->out.size()) most = &o;
    });
    // One stream alone over it is max_stream_queue_bytes' and the write timeout's to bound.
    if (most->dropped || most->out.size() == queued_bytes_) return;
    drop(*most);
  }
}

void h2_session::drop(stream& s) {
  // Its bytes leave the connection's count now; on_close comes from on_stream_close, from a task.
  // They stay in `out` until the stream closes: a DATA frame nghttp2 has already begun may still
  // read them (on_send_data).
  s.dropped = true;
  queued_bytes_ -= s.out.size();
  ctx_->streams_dropped.add();
  send_wanted_ = true;
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_CANCEL);
}

void h2_session::flush(std::int32_t id) {
  check_thread();
  if (find(id) != nullptr) kick();
}

void h2_session::end(std::int32_t id) {
  check_thread();
  stream* s = closed_ ? nullptr : find(id);
  if (s == nullptr || s->finished || s->status == 0) return;
  s->finished = true;
  s->eof = true;
  s->on_drain = nullptr;
  send_wanted_ = true;
  nghttp2_session_resume_data(session_, id);
  if (ctx_->opts->observer != nullptr) observe_finish(*s);
  kick();
}

void h2_session::set_on_close(std::int32_t id, std::function<void()> fn) {
  check_thread();
  if (alive(id)) find(id)->on_close = std::move(fn);
}

void h2_session::set_on_drain(std::int32_t id, std::size_t low_water, std::function<void()> fn) {
  check_thread();
  if (!alive(id)) return;
  stream* s = find(id);
  if (s->out.size() <= low_water) {
    ctx_->loop->post(std::move(fn));
    return;
  }
  s->on_drain = std::move(fn);
  s->drain_low = low_water;
}

std::size_t h2_session::buffered_bytes(std::int32_t id) const {
  const stream* s = closed_ ? nullptr : find(id);
  return s != nullptr ? s->out.size() : 0;
}

void h2_session::set_tag(std::int32_t id, std::uint8_t tag) {
  if (stream* s = closed_ ? nullptr : find(id); s != nullptr) s->tag = tag;
}

// --- sending ---------------------------------------------------------------------------------------

long h2_session::on_read_data(std::int32_t id, std::size_t length, std::uint32_t* flags) {
  stream* s = find(id);
  if (s == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  std::size_t n = std::min(length, s->out.size());
  if (n == 0 && !s->eof) return NGHTTP2_ERR_DEFERRED;
  *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (n == s->out.size() && s->eof) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<long>(n);
}

int h2_session::on_send_data(std::int32_t id, const std::uint8_t* framehd, std::size_t length) {
  stream* s = find(id);
  if (s == nullptr || length > s->out.size()) return NGHTTP2_ERR_CALLBACK_FAILURE;
  if (out_->size() >= high_water_) {
    send_full_ = true;
    return NGHTTP2_ERR_WOULDBLOCK;
  }
  // The one copy of a body byte on its way out, as HTTP/1.1 makes it into the same buffer.
  out_->append(sv(framehd, 9));
  out_->append(std::string_view(s->out.data(), length));
  s->out.consume(length);
  if (!s->dropped) queued_bytes_ -= length;
  if (s->on_drain && s->out.size() <= s->drain_low) {
    ctx_->loop->post(std::move(s->on_drain));
    s->on_drain = nullptr;
  }
  if (s->out.empty() && s->out.capacity() > keep_buffer_bytes) s->out.release();
  return 0;
}

long h2_session::on_send(const std::uint8_t* data, std::size_t length) {
  if (out_->size() >= high_water_) {
    send_full_ = true;
    return NGHTTP2_ERR_WOULDBLOCK;
  }
  out_->append(sv(data, length));
  return static_cast<long>(length);
}

void h2_session::update_stall() {
  // A peer that never opens its window holds our queued bytes: if nothing can move while bytes wait,
  // the write timeout runs (connection::refresh_deadline), as for a peer that does not read at all.
  // Only bytes counted in queued_bytes_ wait for the peer's window: a dropped stream's are on their way
  // out with its RST_STREAM. With none queued (the common case: every turn ends here twice, once more
  // after the send), no stream is looked at.
  bool blocked = false;
  if (out_->empty() && queued_bytes_ > 0) {
    const bool conn_closed = nghttp2_session_get_remote_window_size(session_) <= 0;
    blocked = streams_.any([&](const stream& s) {
      return !s.out.empty() && !s.dropped &&
             (conn_closed || nghttp2_session_get_stream_remote_window_size(session_, s.id) <= 0);
    });
  }
  if (!blocked) {
    stalled_since_ms_ = 0;
  } else if (stalled_since_ms_ == 0) {
    stalled_since_ms_ = ctx_->loop->now_ms();
  }
}

void h2_session::observe_finish(stream& s) {
  const std::uint64_t now = steady_ns();
  exchange_record r;
  r.tag = s.tag;
  r.status = s.status;
  r.bytes_in = s.bytes_in;
  r.bytes_out = s.bytes_out;
  r.total_ns = now > s.start_ns ? now - s.start_ns : 0;
  r.head_ns = s.head_ns != 0 && s.head_ns > s.start_ns ? s.head_ns - s.start_ns : r.total_ns;
  r.client = conn_->client;
  r.method = s.method;
  r.path = s.path;
  r.protocol = http_protocol::h2;
  ctx_->opts->observer->finished(ctx_->loop->index(), r);
}

}  // namespace weir::http
