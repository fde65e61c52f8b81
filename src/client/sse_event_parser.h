// sse_event_parser: an incremental parser for a text/event-stream body (WHATWG HTML, "Server-sent
// events", 9.2.5/9.2.6 "Interpreting an event stream"). Feed it the de-chunked body in pieces of any
// size; it calls the sink once per dispatched event. Lines end in CRLF, LF or CR (a CR at the end of
// one piece followed by LF at the start of the next is one line end). Comment lines (":...") are
// skipped; "data" lines are joined with "\n"; an event with no data line is not dispatched.
//
// Durable Streams (PROTOCOL.md 5.8) sends `event: data` and `event: control` events. The parser knows
// nothing of them: it hands every event to the sink.
//
// One per SSE connection; used on that connection's loop thread.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace weir::client {

struct sse_event {
  std::string_view type;  // "message" when the event had no `event:` field
  std::string_view data;  // data lines joined with "\n", without the final newline
  std::string_view id;    // last `id:` seen on this stream (SSE: the id persists across events)
};

class sse_event_parser {
 public:
  using sink = std::function<void(const sse_event&)>;

  explicit sse_event_parser(std::size_t max_event_bytes = 64u << 20) : max_event_bytes_(max_event_bytes) {}

  // Consumes all of `bytes`. Returns false (and stays failed) if an event grows past max_event_bytes.
  bool feed(std::string_view bytes, const sink& on_event);

  bool failed() const { return failed_; }
  std::size_t events() const { return events_; }
  // True when part of a line or an undispatched event is buffered.
  bool mid_event() const { return !line_.empty() || has_data_ || !type_.empty(); }

 private:
  void process_line(std::string_view line, const sink& on_event);
  void dispatch(const sink& on_event);

  std::size_t max_event_bytes_;
  std::string line_;  // the current, incomplete line
  std::string data_;
  std::string type_;
  std::string id_;
  bool has_data_ = false;
  bool after_cr_ = false;  // the last byte seen was CR: a following LF belongs to it
  bool failed_ = false;
  std::size_t events_ = 0;
};

}  // namespace weir::client
