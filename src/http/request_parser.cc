// Request-head parser (RFC 9112 2-3, 5-6, 9.3). See request_parser.h and docs/http-parser.md.
#include "http/request_parser.h"

#include <array>
#include <cstring>

#include "http/header_scan.h"
#include "http/request_line.h"

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

// Copies a request line into the head, with the target split into path and query.
[[gnu::always_inline]] inline void store_request_line(const detail::request_line& rl, request_head& out) {
  out.method = rl.method;
  out.method_name = rl.method_name;
  out.target = rl.target;
  out.version_minor = rl.version_minor;
  if (rl.target.front() == '/') {
    const char* const path = rl.target.data();
    const char* const path_end = path + rl.target.size();
    const char* const question = rl.question;
    if (question == nullptr) {
      out.path = std::string_view(path, static_cast<std::size_t>(path_end - path));
      out.query = {};
    } else {
      out.path = std::string_view(path, static_cast<std::size_t>(question - path));
      out.query = std::string_view(question + 1, static_cast<std::size_t>(path_end - question - 1));
    }
  } else {
    const std::string_view path = path_of_absolute_form(rl.target);
    const std::size_t q = path.find('?');
    out.path = path.substr(0, q);
    out.query = q == std::string_view::npos ? std::string_view() : path.substr(q + 1);
  }
}

// RFC 9112 3.2 / RFC 3986 3.2.2-3.2.3: Host = uri-host [ ":" port ]. Checked by character class:
// unreserved, sub-delims, '%' (pct-encoded), ':' and the brackets of an IP-literal. Empty is valid.
constexpr std::array<bool, 256> host_char_table = detail::alnum_table_with("-._~!$&'()*+,;=%:[]");

bool valid_host(std::string_view v) {
  // Names and addresses are letters, digits, '.', '-' and ':'.
  const char* const end = v.data() + v.size();
  return detail::scan_alnum_class(v.data(), end, host_char_table, '-', '.', ':') == end;
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

  out.reset();

  // RFC 9112 2.2: ignore empty lines before the request-line.
  const char* p = begin;
  while (p < limit && *p == '\r') {
    if (p + 1 >= limit) return out_of_data();
    if (p[1] != '\n') return fail(400, "bare CR");
    p += 2;
  }

  // Request line (RFC 9112 3): the common shape in one pass, anything else through every check. Two
  // request_line objects: the fast one never has its address taken, so it lives in registers (a
  // string_view read back from memory right after two 8-byte stores stalls on store forwarding).
  const char* const line = p;
  const std::size_t room = static_cast<std::size_t>(limit - line);
  const std::size_t line_cap = limits.max_request_line + 2;  // content + CRLF
  const char* fields_begin = nullptr;
  if (detail::request_line rl; detail::read_request_line_fast(line, room, line_cap, rl)) {
    store_request_line(rl, out);
    fields_begin = rl.next;
  } else {
    detail::request_line general;
    const detail::request_line_status s = detail::read_request_line(line, room, line_cap, general);
    if (s.status == parse_status::need_more) return out_of_data();
    if (s.status == parse_status::error) return fail(s.error_status, s.reason);
    store_request_line(general, out);
    fields_begin = general.next;
  }

  const detail::field_scan fields =
      detail::scan_fields(fields_begin, limit, buf_end, out.headers, out.header_count);
  if (fields.status != parse_status::complete) {
    return {fields.status, 0, fields.error_status, fields.reason};
  }
  return finish_head(out, static_cast<std::size_t>(fields.end - begin), limits);
}

}  // namespace weir::http
