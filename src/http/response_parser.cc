// Response parser (RFC 9112 4, 6.3). See response_parser.h and docs/http-parser.md.
#include "http/response_parser.h"

#include <algorithm>
#include <cstring>

#include "http/header_scan.h"

namespace weir::http {

namespace {

parse_result fail_head(int status, std::string_view reason) {
  return {parse_status::error, 0, status, reason};
}

// RFC 9112 6.3 rules 1-2: HEAD responses, 1xx, 204 and 304 end with their head.
bool has_no_body(method request_method, int status) {
  return request_method == method::head || status < 200 || status == 204 || status == 304;
}

parse_result finish_response_head(response_head& out, method request_method, std::size_t consumed,
                                  const parser_limits& limits) {
  bool cl_overflow = false;
  bool have_te = false;
  bool chunked = false;
  int te_status = 0;
  detail::connection_options conn;
  for (std::size_t i = 0; i < out.header_count; ++i) {
    const header& h = out.headers[i];
    if (h.name.size() == 10 && detail::token_is(h.name, "connection")) {
      detail::read_connection(h.value, conn);
    } else if (h.name.size() == 14 && detail::token_is(h.name, "content-length")) {
      std::uint64_t n = out.content_length;
      if (!detail::read_content_length(h.value, n, cl_overflow))
        return fail_head(400, "invalid Content-Length");
      if (out.has_content_length && n != out.content_length)
        return fail_head(400, "conflicting Content-Length");
      out.content_length = n;
      out.has_content_length = true;
    } else if (h.name.size() == 17 && detail::token_is(h.name, "transfer-encoding")) {
      have_te = true;
      const int s = detail::check_transfer_encoding(h.value, chunked);
      if (s == 400) return fail_head(400, "chunked must be the final transfer coding, once");
      if (s != 0) te_status = s;
    }
  }
  const bool http11 = out.version_minor >= 1;
  out.keep_alive = http11 ? !conn.close : (conn.keep_alive && !conn.close);
  if (has_no_body(request_method, out.status)) {
    out.framing = response_framing::none;
    return {parse_status::complete, consumed, 0, {}};
  }
  if (have_te) {
    // RFC 9112 6.3: TE with CL "ought to be handled as an error"; our client does not decode other
    // codings (it never asks for them).
    if (out.has_content_length) return fail_head(400, "both Content-Length and Transfer-Encoding");
    if (te_status != 0) return fail_head(501, "unsupported transfer coding");
    if (!chunked) return fail_head(400, "empty Transfer-Encoding");
    out.framing = response_framing::chunked;
  } else if (out.has_content_length) {
    if (cl_overflow || out.content_length > limits.max_body_bytes)
      return fail_head(413, "response body too large");
    out.framing = out.content_length > 0 ? response_framing::content_length : response_framing::none;
  } else {
    out.framing = response_framing::until_close;  // RFC 9112 6.3 rule 8
    out.keep_alive = false;
  }
  return {parse_status::complete, consumed, 0, {}};
}

}  // namespace

const header* response_head::find(std::string_view name) const {
  for (std::size_t i = 0; i < header_count; ++i) {
    if (ascii_iequals(headers[i].name, name)) return &headers[i];
  }
  return nullptr;
}

parse_result parse_response_head(std::string_view buf, response_head& out, method request_method,
                                 const parser_limits& limits) {
  const char* const begin = buf.data();
  const char* const buf_end = begin + buf.size();
  const char* const limit = buf.size() > limits.max_head_bytes ? begin + limits.max_head_bytes : buf_end;

  out.header_count = 0;
  out.framing = response_framing::none;
  out.content_length = 0;
  out.has_content_length = false;
  out.keep_alive = true;

  // status-line = HTTP-version SP status-code SP [ reason-phrase ] CRLF (RFC 9112 4).
  const std::size_t room = static_cast<std::size_t>(limit - begin);
  const std::size_t line_cap = limits.max_request_line + 2;
  const char* const lf =
      room == 0 ? nullptr : static_cast<const char*>(std::memchr(begin, '\n', std::min(room, line_cap)));
  if (lf == nullptr) {
    if (room >= line_cap || limit < buf_end) return fail_head(431, "response head too large");
    return {};
  }
  if (lf == begin || lf[-1] != '\r') return fail_head(400, "status line must end with CRLF");
  const char* const cr = lf - 1;
  const char* p = begin;
  if (cr - p < 12 || std::memcmp(p, "HTTP/", 5) != 0 || p[5] < '0' || p[5] > '9' || p[6] != '.' ||
      p[7] < '0' || p[7] > '9' || p[8] != ' ') {
    return fail_head(400, "invalid status line");
  }
  if (p[5] != '1') return fail_head(505, "HTTP version not supported");
  out.version_minor = p[7] == '0' ? 0 : 1;
  p += 9;
  int status = 0;
  for (int i = 0; i < 3; ++i) {
    if (p[i] < '0' || p[i] > '9') return fail_head(400, "invalid status code");
    status = status * 10 + (p[i] - '0');
  }
  if (status < 100) return fail_head(400, "invalid status code");
  out.status = status;
  p += 3;
  // Leniency for a client: accept "HTTP/1.1 200\r\n" without the SP before the empty reason.
  if (p < cr) {
    if (*p != ' ') return fail_head(400, "invalid status line");
    ++p;
  }
  const char* reason = p;
  while (p < cr) {
    p = detail::scan_field_value(p, cr);
    if (p < cr) {
      if (*p != '\t') return fail_head(400, "invalid character in reason phrase");
      ++p;
    }
  }
  out.reason = std::string_view(reason, static_cast<std::size_t>(cr - reason));

  const detail::field_scan fields =
      detail::scan_fields(lf + 1, limit, buf_end, out.headers, out.header_count);
  if (fields.status != parse_status::complete) {
    return {fields.status, 0, fields.error_status,
            fields.error_status == 431 ? std::string_view("response head too large") : fields.reason};
  }
  return finish_response_head(out, request_method, static_cast<std::size_t>(fields.end - begin), limits);
}

void response_parser::reset(method request_method) {
  method_ = request_method;
  phase_ = phase::head;
  left_ = 0;
  body_bytes_ = 0;
  error_status_ = 0;
  error_reason_ = {};
  chunked_.reset();
  chunked_.set_max_body(limits_.max_body_bytes);
}

response_parser::step response_parser::fail(int status, std::string_view reason) {
  phase_ = phase::failed;
  error_status_ = status;
  error_reason_ = reason;
  return {parse_status::error, 0, {}, status, reason};
}

response_parser::step response_parser::next(std::string_view in) {
  switch (phase_) {
    case phase::head: {
      const parse_result r = parse_response_head(in, head_, method_, limits_);
      if (r.status == parse_status::need_more) return {};
      if (r.status == parse_status::error) return fail(r.error_status, r.reason);
      switch (head_.framing) {
        case response_framing::none:
          phase_ = phase::done;
          return {parse_status::complete, r.consumed, {}, 0, {}};
        case response_framing::content_length:
          left_ = head_.content_length;
          phase_ = phase::length;
          break;
        case response_framing::chunked:
          chunked_.reset();
          chunked_.set_max_body(limits_.max_body_bytes);
          phase_ = phase::chunked;
          break;
        case response_framing::until_close:
          phase_ = phase::until_close;
          break;
      }
      // Stop after the head so that the caller can read head() before dropping these bytes.
      return {parse_status::need_more, r.consumed, {}, 0, {}};
    }
    case phase::length: {
      const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(left_, in.size()));
      left_ -= take;
      body_bytes_ += take;
      if (left_ == 0) phase_ = phase::done;
      return {left_ == 0 ? parse_status::complete : parse_status::need_more, take, in.substr(0, take), 0, {}};
    }
    case phase::chunked: {
      std::string_view data;
      const chunked_decoder::step s = chunked_.next(in, data);
      body_bytes_ += data.size();
      if (s.status == parse_status::error) {
        step e = fail(s.error_status, s.reason);
        e.consumed = s.consumed;
        return e;
      }
      if (s.status == parse_status::complete) phase_ = phase::done;
      return {s.status, s.consumed, data, 0, {}};
    }
    case phase::until_close: {
      // Up to the limit the bytes are body; the first byte past it is the error, wherever the input
      // was split.
      const std::uint64_t room = limits_.max_body_bytes - body_bytes_;
      if (!in.empty() && room == 0) return fail(413, "response body too large");
      const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(room, in.size()));
      body_bytes_ += take;
      return {parse_status::need_more, take, in.substr(0, take), 0, {}};
    }
    case phase::done:
      return {parse_status::complete, 0, {}, 0, {}};
    case phase::failed:
      return {parse_status::error, 0, {}, error_status_, error_reason_};
  }
  return {};
}

response_parser::step response_parser::finish() {
  switch (phase_) {
    case phase::until_close:
      phase_ = phase::done;
      return {parse_status::complete, 0, {}, 0, {}};
    case phase::done:
      return {parse_status::complete, 0, {}, 0, {}};
    case phase::failed:
      return {parse_status::error, 0, {}, error_status_, error_reason_};
    case phase::head:
      return fail(400, "connection closed before the response head");
    case phase::length:
    case phase::chunked:
      break;
  }
  return fail(400, "connection closed before the end of the body");
}

}  // namespace weir::http
