// Chunked transfer coding decoder (RFC 9112 7.1). See chunked_decoder in request_parser.h.
#include <algorithm>

#include "http/header_scan.h"
#include "http/request_parser.h"

namespace weir::http {

namespace {
// A chunk-ext longer than this is refused; nobody needs kilobytes of extensions per chunk.
constexpr std::uint32_t max_chunk_ext = 4096;
// The trailer section is bounded like a head.
constexpr std::uint32_t max_trailer_bytes = 16 * 1024;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  const int l = c | 0x20;
  if (l >= 'a' && l <= 'f') return l - 'a' + 10;
  return -1;
}

bool is_field_value_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 0x20 && u != 0x7f) || u == '\t';
}
}  // namespace

void chunked_decoder::reset() {
  total_ = 0;
  chunk_left_ = 0;
  line_bytes_ = 0;
  state_ = state::size_first;
  error_status_ = 0;
  error_reason_ = {};
}

chunked_decoder::step chunked_decoder::fail(std::size_t consumed, int status, std::string_view reason) {
  state_ = state::failed;
  error_status_ = status;
  error_reason_ = reason;
  return {parse_status::error, consumed, status, reason};
}

chunked_decoder::step chunked_decoder::next(std::string_view in, std::string_view& data) {
  data = {};
  std::size_t i = 0;
  const std::size_t n = in.size();
  while (i < n) {
    const char c = in[i];
    switch (state_) {
      case state::size_first: {
        const int d = hex_value(c);
        if (d < 0) return fail(i, 400, "invalid chunk size");
        chunk_left_ = static_cast<std::uint64_t>(d);
        state_ = state::size;
        ++i;
        break;
      }
      case state::size: {
        const int d = hex_value(c);
        if (d >= 0) {
          // RFC 9112 7.1: chunk-size is hex of unbounded length; refuse what overflows 64 bits.
          if (chunk_left_ > (UINT64_MAX >> 4)) return fail(i, 400, "chunk size overflow");
          chunk_left_ = (chunk_left_ << 4) | static_cast<std::uint64_t>(d);
        } else if (c == '\r') {
          state_ = state::size_lf;
        } else if (c == ';') {
          state_ = state::ext;
          line_bytes_ = 0;
        } else if (detail::is_ows(c)) {
          state_ = state::size_ws;  // BWS before a chunk-ext (RFC 9112 7.1.1)
        } else {
          return fail(i, 400, "invalid chunk size");
        }
        ++i;
        break;
      }
      case state::size_ws:
        if (c == ';') {
          state_ = state::ext;
          line_bytes_ = 0;
        } else if (!detail::is_ows(c)) {
          return fail(i, 400, "invalid chunk size line");
        }
        ++i;
        break;
      case state::ext:
        // chunk-ext names and values are ignored (RFC 9112 7.1.1); only their characters are checked.
        if (c == '\r') {
          state_ = state::size_lf;
        } else if (!is_field_value_char(c)) {
          return fail(i, 400, "invalid character in chunk extension");
        } else if (++line_bytes_ > max_chunk_ext) {
          return fail(i, 400, "chunk extension too long");
        }
        ++i;
        break;
      case state::size_lf:
        if (c != '\n') return fail(i, 400, "chunk size line must end with CRLF");
        ++i;
        if (chunk_left_ == 0) {
          state_ = state::trailer_start;
          line_bytes_ = 0;
        } else {
          if (chunk_left_ > max_body_ - total_) return fail(i, 413, "request body too large");
          state_ = state::data;
        }
        break;
      case state::data: {
        const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_left_, n - i));
        data = in.substr(i, take);
        i += take;
        chunk_left_ -= take;
        total_ += take;
        if (chunk_left_ == 0) state_ = state::data_cr;
        return {parse_status::need_more, i, 0, {}};
      }
      case state::data_cr:
        if (c != '\r') return fail(i, 400, "chunk data must end with CRLF");
        state_ = state::data_lf;
        ++i;
        break;
      case state::data_lf:
        if (c != '\n') return fail(i, 400, "chunk data must end with CRLF");
        state_ = state::size_first;
        ++i;
        break;
      case state::trailer_start:
        if (++line_bytes_ > max_trailer_bytes) return fail(i, 431, "trailer section too large");
        if (c == '\r') {
          state_ = state::final_lf;
        } else if (detail::is_tchar(c)) {
          state_ = state::trailer_name;
        } else if (detail::is_ows(c)) {
          return fail(i, 400, "obsolete line folding in trailer");
        } else {
          return fail(i, 400, "invalid trailer field");
        }
        ++i;
        break;
      case state::trailer_name:
        if (++line_bytes_ > max_trailer_bytes) return fail(i, 431, "trailer section too large");
        if (c == ':') {
          state_ = state::trailer_value;
        } else if (!detail::is_tchar(c)) {
          return fail(i, 400, "invalid trailer field name");
        }
        ++i;
        break;
      case state::trailer_value:
        if (++line_bytes_ > max_trailer_bytes) return fail(i, 431, "trailer section too large");
        if (c == '\r') {
          state_ = state::trailer_lf;
        } else if (!is_field_value_char(c)) {
          return fail(i, 400, "invalid character in trailer value");
        }
        ++i;
        break;
      case state::trailer_lf:
        if (c != '\n') return fail(i, 400, "trailer line must end with CRLF");
        state_ = state::trailer_start;
        ++i;
        break;
      case state::final_lf:
        if (c != '\n') return fail(i, 400, "chunked body must end with CRLF");
        state_ = state::done;
        return {parse_status::complete, i + 1, 0, {}};
      case state::done:
        return {parse_status::complete, 0, 0, {}};
      case state::failed:
        return {parse_status::error, 0, error_status_, error_reason_};
    }
  }
  if (state_ == state::done) return {parse_status::complete, i, 0, {}};
  if (state_ == state::failed) return {parse_status::error, i, error_status_, error_reason_};
  return {parse_status::need_more, i, 0, {}};
}

}  // namespace weir::http
