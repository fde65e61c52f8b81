// Server-Sent Events framing (PROTOCOL.md 5.8; WHATWG HTML 9.2 event stream format).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace weir::protocol {

// "event: data\n" then one "data:" line per line of `payload` (split at CRLF, CR or LF so embedded
// line breaks cannot end the event early or inject fields), then a blank line. A line that begins with
// a space gets one more after the colon: SSE readers strip one, and the line arrives whole.
void append_data_event(std::string& out, std::string_view payload);

// One data event written in pieces: a payload of any size (a 16 MiB record) becomes one event whose
// text is produced a window at a time, so the producer holds the payload's shared bytes and never a
// formatted copy of all of it. The output is the same as append_data_event's for the concatenated
// payload (base64: the same as append_data_event(base64_encode(payload))); a CRLF split between two
// pieces is still one line break.
class sse_data_writer {
 public:
  explicit sse_data_writer(bool base64) : base64_(base64) {}
  void begin(std::string& out);                        // "event: data\ndata:"
  void add(std::string& out, std::string_view bytes);  // payload bytes, raw (encoded here when base64)
  void finish(std::string& out);                       // the base64 tail, then the end of the event

 private:
  bool base64_;
  bool after_cr_ = false;     // the last byte added was CR: a leading LF of the next piece is its CRLF
  bool line_start_ = false;   // no byte of the current data line written yet
  unsigned char carry_[2]{};  // base64: bytes of an incomplete 3-byte group
  std::size_t carry_n_ = 0;
};

struct control_fields {
  std::string next_offset;
  std::optional<std::string> cursor;  // omitted when the stream is closed
  bool up_to_date = false;
  bool closed = false;
};
void append_control_event(std::string& out, const control_fields& c);

// "id:<id>\n": the field that makes an EventSource remember where it is (WHATWG HTML 9.2.6); written
// before an event's other fields, so it belongs to that event. weir's ids are offsets ([0-9_], never a
// line break): the offset after the event, which the browser sends back as Last-Event-ID when it
// reconnects by itself.
void append_event_id(std::string& out, std::string_view id);

// "retry:<ms>\n\n": how long an EventSource waits before it reconnects (WHATWG HTML 9.2.6). An event
// with no data is dispatched to nobody.
void append_retry(std::string& out, unsigned ms);

// A comment line, as a keep-alive.
inline constexpr std::string_view sse_keep_alive = ":\n\n";

// RFC 4648 standard base64 (with padding).
std::string base64_encode(std::string_view bytes);

// True when SSE data events for this content type must be base64 (not text/* nor application/json).
bool sse_needs_base64(std::string_view content_type);

}  // namespace weir::protocol
