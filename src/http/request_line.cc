// Request-line readers (RFC 9112 3, 2.3). See request_line.h.
#include "http/request_line.h"

#include <cstring>

#include "http/header_scan.h"

namespace weir::http::detail {

namespace {

request_line_status fail(int status, std::string_view reason) {
  return {parse_status::error, status, reason};
}

}  // namespace

request_line_status read_request_line(const char* line, std::size_t room, std::size_t line_cap,
                                      request_line& out) {
  // Find the LF first, so that the length limit (414) is checked on the same bytes however the
  // request is split. (room == 0 also covers an empty view, whose data() may be null.)
  const char* const lf =
      room == 0 ? nullptr
                : static_cast<const char*>(std::memchr(line, '\n', room < line_cap ? room : line_cap));
  if (lf == nullptr) {
    if (room >= line_cap) return fail(414, "request line too long");
    return {};
  }
  if (lf == line || lf[-1] != '\r') return fail(400, "request line must end with CRLF");
  const char* const cr = lf - 1;

  // method = token, then exactly one SP.
  const char* p = line;
  while (p < cr && is_tchar(*p)) ++p;
  if (p == line) return fail(400, "invalid method");
  if (*p != ' ') return fail(400, "invalid character in method");
  out.method_name = std::string_view(line, static_cast<std::size_t>(p - line));
  out.method = method_from_token(out.method_name);

  // request-target: visible ASCII up to the next SP (control characters, DEL and raw non-ASCII rejected).
  const char* const target = ++p;
  p = scan_vchar(p, cr);
  if (p == target) return fail(400, "empty request target");
  if (p == cr || *p != ' ') return fail(400, "invalid character in request target");
  out.target = std::string_view(target, static_cast<std::size_t>(p - target));
  const std::size_t q = out.target.find('?');
  out.question = q == std::string_view::npos ? nullptr : target + q;
  ++p;

  // HTTP-version = "HTTP/" DIGIT "." DIGIT (RFC 9112 2.3), then CRLF.
  if (cr - p != 8 || std::memcmp(p, "HTTP/", 5) != 0 || p[5] < '0' || p[5] > '9' || p[6] != '.' ||
      p[7] < '0' || p[7] > '9') {
    return fail(400, "invalid HTTP version");
  }
  if (p[5] != '1') return fail(505, "HTTP version not supported");
  out.version_minor = p[7] == '0' ? 0 : 1;
  out.next = lf + 1;
  return {parse_status::complete, 0, {}};
}

}  // namespace weir::http::detail
