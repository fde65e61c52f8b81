// HTTP/1.1 request-head parser and chunked-body decoder (RFC 9112). Pure functions over a byte span:
// they return "complete, consumed N", "need more" or "error (status, reason)", copy nothing and
// allocate nothing. Views in the outputs point into the caller's buffer. What is accepted and
// rejected, with the RFC sections, is in docs/http-parser.md.
//
// CONTRACT (written before the implementation; the implementer may add, not break):
//   - parse_request_head() may be called again from scratch on a longer buffer after need_more; it must
//     give the same answer for a request split at any byte.
//   - Errors carry the status to answer with: 400, 413, 414, 417, 431, 501 or 505; the connection then
//     closes.
//
// Threading: everything here is reentrant; a chunked_decoder belongs to one connection (one core).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weir::http {

enum class method : std::uint8_t { get, head, post, put, del, options, patch, other };

struct header {
  std::string_view name;
  std::string_view value;  // surrounding whitespace trimmed
};

inline constexpr std::size_t max_headers = 100;

enum class body_framing : std::uint8_t { none, content_length, chunked };

struct parser_limits {
  std::size_t max_request_line = std::size_t{8} * 1024;  // request line without CRLF; over it: 414
  std::size_t max_head_bytes = std::size_t{32} * 1024;   // request line + headers + final CRLF; over it: 431
  std::uint64_t max_body_bytes = 64ull << 20;            // declared Content-Length over it: 413
};

struct request_head {
  http::method method = method::other;
  std::string_view method_name;
  std::string_view target;  // as sent (origin-form, absolute-form, authority-form or "*")
  std::string_view path;    // target up to '?'; for absolute-form the part after the authority ("/" if none)
  std::string_view query;   // after '?', without it; empty if none
  std::uint8_t version_minor = 1;  // HTTP/1.<minor>: 0 or 1 (higher minors are read as 1, RFC 9110 2.5)
  header headers[max_headers];
  std::size_t header_count = 0;
  body_framing framing = body_framing::none;
  std::uint64_t content_length = 0;  // when framing == content_length
  bool keep_alive = true;            // from version + Connection header (RFC 9112 9.3)
  bool expect_continue = false;      // Expect: 100-continue (HTTP/1.1 only, RFC 9110 10.1.1)

  // First header with this name (ASCII case-insensitive), or nullptr.
  const header* find(std::string_view name) const;
  // Back to a head with no fields, without touching `headers` (3 KiB; only the first header_count
  // entries are ever read): once per request.
  void reset() {
    method = method::other;
    method_name = target = path = query = {};
    version_minor = 1;
    header_count = 0;
    framing = body_framing::none;
    content_length = 0;
    keep_alive = true;
    expect_continue = false;
  }
};

enum class parse_status : std::uint8_t { complete, need_more, error };

struct parse_result {
  parse_status status = parse_status::need_more;
  std::size_t consumed = 0;  // bytes of the head (incl. final CRLF) when complete
  int error_status = 0;      // when error: 400, 413, 414, 417, 431, 501, 505
  std::string_view reason;   // when error: short static text
};

// Parses one request head at the start of `buf` (leading empty lines are skipped and counted in
// `consumed`, RFC 9112 2.2). Cost is linear in the bytes up to the end of the head, and never looks
// past limits.max_head_bytes, so re-parsing a growing buffer after need_more stays bounded. An error
// found in a prefix of a request is also the answer for the whole request (checks run in byte order).
parse_result parse_request_head(std::string_view buf, request_head& out, const parser_limits& limits = {});

// Method token to enum (case-sensitive, RFC 9110 9.1). Anything else is method::other.
http::method method_from_token(std::string_view token);

// ASCII case-insensitive equality (field names, connection options, codings).
bool ascii_iequals(std::string_view a, std::string_view b);

// Incremental chunked-body decoder (RFC 9112 7.1), trailers parsed and ignored. Feed it bytes; it
// reports how many it consumed and hands out decoded data as views into the input. It keeps its own
// state between calls, so the caller may discard consumed bytes (unlike the head parser).
//
// Two ways to drive it:
//   - feed(in, sink): decodes all of `in` it can, calling sink(std::string_view) per data span.
//   - next(in, data): non-template core; consumes input up to and including at most one data span,
//     returned in `data` (a view into `in`). Call again on the rest while status is need_more and
//     consumed > 0; consumed == 0 with need_more means "read more bytes".
// Once it returns complete or error it stays there until reset().
class chunked_decoder {
 public:
  struct step {
    parse_status status = parse_status::need_more;  // complete once the last chunk and trailers are read
    std::size_t consumed = 0;                       // input bytes used by this call
    int error_status = 0;                           // 400 (syntax), 413 (over max body), 431 (trailers)
    std::string_view reason;
  };

  chunked_decoder() = default;
  // Decoded body larger than max_body_bytes fails with 413 as soon as a chunk size announces it.
  explicit chunked_decoder(std::uint64_t max_body_bytes) : max_body_(max_body_bytes) {}

  // Decodes as much of `in` as possible; decoded body bytes are passed to `sink(std::string_view)`.
  template <class Sink>
  step feed(std::string_view in, Sink&& sink) {
    step total;
    for (;;) {
      std::string_view data;
      step s = next(in.substr(total.consumed), data);
      total.consumed += s.consumed;
      if (!data.empty()) sink(data);
      if (s.status != parse_status::need_more || s.consumed == 0) {
        total.status = s.status;
        total.error_status = s.error_status;
        total.reason = s.reason;
        return total;
      }
    }
  }
  step next(std::string_view in, std::string_view& data);

  void reset();  // ready for a new body; keeps max_body_bytes
  void set_max_body(std::uint64_t max_body_bytes) { max_body_ = max_body_bytes; }
  std::uint64_t decoded_bytes() const { return total_; }
  bool done() const { return state_ == state::done; }

 private:
  enum class state : std::uint8_t {
    size_first,  // first hex digit of a chunk-size
    size,        // more hex digits
    size_ws,     // BWS after the size, before ';'
    ext,         // chunk-ext up to CR
    size_lf,     // LF after the chunk-size line
    data,        // chunk-data
    data_cr,     // CRLF after chunk-data
    data_lf,
    trailer_start,  // start of a trailer field line, or the final CRLF
    trailer_name,
    trailer_value,
    trailer_lf,  // LF ending a trailer field line
    final_lf,    // LF of the final CRLF
    done,
    failed,
  };
  step fail(std::size_t consumed, int status, std::string_view reason);

  std::uint64_t total_ = 0;
  std::uint64_t max_body_ = UINT64_MAX;
  std::uint64_t chunk_left_ = 0;  // chunk-size while parsing it, then bytes of chunk-data still due
  std::uint32_t line_bytes_ = 0;  // bytes of the current chunk-ext or of the trailer section
  state state_ = state::size_first;
  int error_status_ = 0;
  std::string_view error_reason_;
};

}  // namespace weir::http
