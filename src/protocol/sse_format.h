// Server-Sent Events framing (PROTOCOL.md 5.8; WHATWG HTML 9.2 event stream format).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace weir::protocol {

// "event: data\n" then one "data:" line per line of `payload` (split at CRLF, CR or LF so embedded
// line breaks cannot end the event early or inject fields), then a blank line.
void append_data_event(std::string& out, std::string_view payload);

struct control_fields {
  std::string next_offset;
  std::optional<std::string> cursor;  // omitted when the stream is closed
  bool up_to_date = false;
  bool closed = false;
};
void append_control_event(std::string& out, const control_fields& c);

// A comment line, as a keep-alive.
inline constexpr std::string_view sse_keep_alive = ":\n\n";

// RFC 4648 standard base64 (with padding).
std::string base64_encode(std::string_view bytes);

// True when SSE data events for this content type must be base64 (not text/* nor application/json).
bool sse_needs_base64(std::string_view content_type);

}  // namespace weir::protocol
