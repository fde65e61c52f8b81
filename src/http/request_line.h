// Request-line reading (RFC 9112 3), internal to the request parser. Two readers that must agree:
//   - read_request_line: the general one, every check and every error status;
//   - read_request_line_fast: only the common shape (token method, SP, VCHAR target, SP, "HTTP/1.1"
//     or "HTTP/1.0", CRLF), in one pass with no library calls. It never decides an error: on anything
//     else it returns false and the caller asks the general reader.
// Whenever the fast reader accepts a line, the general one accepts it with the same fields; the unit
// test and the request-parser fuzz target check that on every input they see.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "http/header_scan.h"
#include "http/request_parser.h"

namespace weir::http::detail {

struct request_line {
  http::method method = method::other;
  std::string_view method_name;
  std::string_view target;
  const char* question = nullptr;  // the first '?' in target, or nullptr
  std::uint8_t version_minor = 1;
  const char* next = nullptr;  // just past the LF
};

struct request_line_status {
  parse_status status = parse_status::need_more;  // need_more: no LF within `room` bytes (nor 414)
  int error_status = 0;
  std::string_view reason;
};

// `room` bytes are readable at `line`; the line including its CRLF may be at most `line_cap` bytes
// (over it: 414). A line is judged only once its LF is there, so the answer does not depend on where
// the bytes were split.
request_line_status read_request_line(const char* line, std::size_t room, std::size_t line_cap,
                                      request_line& out);

// Same contract for the common shape; false means "not decided here", never an error. Inline: the
// caller reads the fields straight from registers (an out-of-line call stores them, and reading a
// string_view back as one 16-byte load stalls on store forwarding).
[[gnu::always_inline]] inline bool read_request_line_fast(const char* line, std::size_t room,
                                                          std::size_t line_cap, request_line& out) {
  const auto load4 = [](const char* p) {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  const auto load8 = [](const char* p) {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  // The LF must lie within the first min(room, line_cap) bytes, as in the general reader.
  const char* const end = line + (room < line_cap ? room : line_cap);
  const char* p = line;
  if (end - p >= 4 && load4(p) == load4("GET ")) {
    out.method = method::get;
    out.method_name = std::string_view(p, 3);
    p += 4;
  } else {
    while (p < end && is_tchar(*p)) ++p;
    if (p == line || p == end || *p != ' ') return false;
    out.method_name = std::string_view(line, static_cast<std::size_t>(p - line));
    out.method = method_from_token(out.method_name);
    ++p;
  }
  const char* const target = p;
  p = scan_target(p, end, out.question);
  // " HTTP/1.x\r\n" is 11 bytes; its SP is where the target scan stopped.
  if (p == target || end - p < 11) return false;
  if (load8(p) != load8(" HTTP/1.") || p[9] != '\r' || p[10] != '\n') return false;
  if (p[8] == '1') {
    out.version_minor = 1;
  } else if (p[8] == '0') {
    out.version_minor = 0;
  } else {
    return false;
  }
  out.target = std::string_view(target, static_cast<std::size_t>(p - target));
  out.next = p + 11;
  return true;
}

}  // namespace weir::http::detail
