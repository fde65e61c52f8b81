// Request-head parser (RFC 9112 2-3, 5-6, 9.3). See request_parser.h and docs/http-parser.md.
#include "http/request_parser.h"

#include <cstring>

#include "http/header_scan.h"

namespace weir::http {

namespace {

parse_result fail(int status, std::string_view reason) {
  return {parse_status::error, 0, status, reason};
}

// absolute-form "http://authority/path?q" (RFC 9112 3.2.2): the path is what follows the authority.
std::string_view path_of_absolute_form(std::string_view target) {
  std::size_t scheme_end = 0;
  if (target.size() >= 7 && detail::token_is(target.substr(0, 4), "http")) {
    if (target.substr(4, 3) == "://")
      scheme_end = 7;
    else if (target.size() >= 8 && (target[4] | 0x20) == 's' && target.substr(5, 3) == "://")
      scheme_end = 8;
  }
  if (scheme_end == 0) return target;  // authority-form, "*" or something the router will not match
  const std::size_t slash = target.find_first_of("/?", scheme_end);
  if (slash == std::string_view::npos || target[slash] == '?') return "/";
  return target.substr(slash);
}

// RFC 9112 3.2 / RFC 3986 3.2.2-3.2.3: Host = uri-host [ ":" port ]. Checked by character class:
// unreserved, sub-delims, '%' (pct-encoded), ':' and the brackets of an IP-literal. Empty is valid.
bool valid_host(std::string_view v) {
  constexpr std::string_view other = "-._~!$&'()*+,;=%:[]";  // unreserved, sub-delims, '%', ':', brackets
  for (char c : v) {
    const unsigned u = static_cast<unsigned char>(c);
    const bool alnum = (u - '0' < 10u) || ((u | 0x20u) - 'a' < 26u);
    if (!alnum && other.find(c) == std::string_view::npos) return false;
  }
  return true;
}

// Applies the header semantics once the head is complete: framing, Host, Connection, Expect.
parse_result finish_head(request_head& out, std::size_t consumed, const parser_limits& limits) {
  std::size_t hosts = 0;
  bool have_cl = false;
  bool cl_overflow = false;
  bool have_te = false;
  bool chunked = false;
  int te_status = 0;
  bool expect_other = false;
  detail::connection_options conn;
  for (std::size_t i = 0; i < out.header_count; ++i) {
    const header& h = out.headers[i];
    switch (h.name.size()) {
      case 4:
        if (detail::token_is(h.name, "host")) {
          if (!valid_host(h.value)) return fail(400, "invalid Host");
          ++hosts;
        }
        break;
      case 6:
        if (detail::token_is(h.name, "expect")) {
          if (ascii_iequals(h.value, "100-continue"))
            out.expect_continue = true;
          else
            expect_other = true;
        }
        break;
      case 10:
        if (detail::token_is(h.name, "connection")) detail::read_connection(h.value, conn);
        break;
      case 14:
        if (detail::token_is(h.name, "content-length")) {
          // RFC 9110 8.6 / RFC 9112 6.3: differing values make the framing unknowable.
          std::uint64_t n = out.content_length;
          if (!detail::read_content_length(h.value, n, cl_overflow))
            return fail(400, "invalid Content-Length");
          if (have_cl && n != out.content_length) return fail(400, "conflicting Content-Length");
          out.content_length = n;
          have_cl = true;
        }
        break;
      case 17:
        if (detail::token_is(h.name, "transfer-encoding")) {
          have_te = true;
          const int s = detail::check_transfer_encoding(h.value, chunked);
          if (s == 400) return fail(400, "chunked must be the final transfer coding, once");
          if (s != 0) te_status = s;
        }
        break;
      default:
        break;
    }
  }
  const bool http11 = out.version_minor >= 1;
  if (have_te) {
    // RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 means faulty framing; 6.3: with Content-Length it
    // is a smuggling attempt. Both are rejected rather than "TE overrides CL".
    if (!http11) return fail(400, "Transfer-Encoding in HTTP/1.0");
    if (have_cl) return fail(400, "both Content-Length and Transfer-Encoding");
    if (te_status != 0) return fail(501, "unsupported transfer coding");
    if (!chunked) return fail(400, "empty Transfer-Encoding");
    out.framing = body_framing::chunked;
  } else if (have_cl) {
    if (cl_overflow || out.content_length > limits.max_body_bytes) return fail(413, "request body too large");
    out.framing = out.content_length > 0 ? body_framing::content_length : body_framing::none;
  }
  // RFC 9112 3.2: exactly one Host in HTTP/1.1; never more than one.
  if (hosts > 1) return fail(400, "more than one Host");
  if (http11 && hosts == 0) return fail(400, "missing Host");
  if (http11) {
    // RFC 9110 10.1.1: only 100-continue is defined; a 1.0 server ignores Expect.
    if (expect_other) return fail(417, "unsupported expectation");
    out.keep_alive = !conn.close;
  } else {
    out.expect_continue = false;
    out.keep_alive = conn.keep_alive && !conn.close;
  }
  return {parse_status::complete, consumed, 0, {}};
}

}  // namespace

http::method method_from_token(std::string_view t) {
  switch (t.size()) {
    case 3:
      if (t == "GET") return method::get;
      if (t == "PUT") return method::put;
      break;
    case 4:
      if (t == "POST") return method::post;
      if (t == "HEAD") return method::head;
      break;
    case 5:
      if (t == "PATCH") return method::patch;
      break;
    case 6:
      if (t == "DELETE") return method::del;
      break;
    case 7:
      if (t == "OPTIONS") return method::options;
      break;
    default:
      break;
  }
  return method::other;
}

bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    unsigned x = static_cast<unsigned char>(a[i]);
    unsigned y = static_cast<unsigned char>(b[i]);
    if (x == y) continue;
    if (x - 'A' < 26u) x |= 0x20u;
    if (y - 'A' < 26u) y |= 0x20u;
    if (x != y) return false;
  }
  return true;
}

const header* request_head::find(std::string_view name) const {
  for (std::size_t i = 0; i < header_count; ++i) {
    if (ascii_iequals(headers[i].name, name)) return &headers[i];
  }
  return nullptr;
}

parse_result parse_request_head(std::string_view buf, request_head& out, const parser_limits& limits) {
  const char* const begin = buf.data();
  const char* const buf_end = begin + buf.size();
  // Nothing past max_head_bytes is ever read: a prefix and the whole request see the same bytes.
  const char* const limit = buf.size() > limits.max_head_bytes ? begin + limits.max_head_bytes : buf_end;
  const auto out_of_data = [&]() -> parse_result {
    if (limit < buf_end) return fail(431, "request header fields too large");
    return {};
  };

  out.header_count = 0;
  out.framing = body_framing::none;
  out.content_length = 0;
  out.keep_alive = true;
  out.expect_continue = false;

  // RFC 9112 2.2: ignore empty lines before the request-line.
  const char* p = begin;
  while (p < limit && *p == '\r') {
    if (p + 1 >= limit) return out_of_data();
    if (p[1] != '\n') return fail(400, "bare CR");
    p += 2;
  }

  // Request line (RFC 9112 3): find its LF first, so that its length limit (414) is checked on the
  // same bytes however the request is split.
  const char* const line = p;
  const std::size_t room = static_cast<std::size_t>(limit - line);
  const std::size_t line_cap = limits.max_request_line + 2;  // content + CRLF
  // (room == 0 also covers an empty view, whose data() may be null: memchr must not see it.)
  const char* const lf =
      room == 0 ? nullptr
                : static_cast<const char*>(std::memchr(line, '\n', room < line_cap ? room : line_cap));
  if (lf == nullptr) {
    if (room >= line_cap) return fail(414, "request line too long");
    return out_of_data();
  }
  if (lf == line || lf[-1] != '\r') return fail(400, "request line must end with CRLF");
  const char* const cr = lf - 1;

  // method = token, then exactly one SP.
  while (p < cr && detail::is_tchar(*p)) ++p;
  if (p == line) return fail(400, "invalid method");
  if (*p != ' ') return fail(400, "invalid character in method");
  out.method_name = std::string_view(line, static_cast<std::size_t>(p - line));
  out.method = method_from_token(out.method_name);

  // request-target: visible ASCII up to the next SP (control characters, DEL and raw non-ASCII rejected).
  const char* const target = ++p;
  p = detail::scan_vchar(p, cr);
  if (p == target) return fail(400, "empty request target");
  if (p == cr || *p != ' ') return fail(400, "invalid character in request target");
  // Kept in a local: reading the member back right after storing it halves would stall on store
  // forwarding (two 8-byte stores, one 16-byte load), measurably on the pipelined path.
  const std::string_view target_view(target, static_cast<std::size_t>(p - target));
  out.target = target_view;
  ++p;

  // HTTP-version = "HTTP/" DIGIT "." DIGIT (RFC 9112 2.3), then CRLF.
  if (cr - p != 8 || std::memcmp(p, "HTTP/", 5) != 0 || p[5] < '0' || p[5] > '9' || p[6] != '.' ||
      p[7] < '0' || p[7] > '9') {
    return fail(400, "invalid HTTP version");
  }
  if (p[5] != '1') return fail(505, "HTTP version not supported");
  out.version_minor = p[7] == '0' ? 0 : 1;

  // path and query
  std::string_view path = target_view;
  if (path.front() != '/') path = path_of_absolute_form(path);
  const std::size_t q = path.find('?');
  if (q == std::string_view::npos) {
    out.path = path;
    out.query = {};
  } else {
    out.path = path.substr(0, q);
    out.query = path.substr(q + 1);
  }

  const detail::field_scan fields =
      detail::scan_fields(lf + 1, limit, buf_end, out.headers, out.header_count);
  if (fields.status != parse_status::complete) {
    return {fields.status, 0, fields.error_status, fields.reason};
  }
  return finish_head(out, static_cast<std::size_t>(fields.end - begin), limits);
}

}  // namespace weir::http
