// NOTE TO THE HELPER IMPLEMENTING THIS (remove this line when done): read /tmp/common.md first: working
// rules for build directories (use build/parser), git (commit only your paths) and the 05:25 UTC deadline.
// HTTP/1.1 request-head parser and chunked-body decoder (RFC 9112). Pure functions over a byte span:
// they return "complete, consumed N", "need more" or "error (status, reason)", copy nothing and
// allocate nothing. Views in the outputs point into the caller's buffer.
//
// CONTRACT (written before the implementation; the implementer may add, not break):
//   - parse_request_head() may be called again from scratch on a longer buffer after need_more; it must
//     give the same answer for a request split at any byte.
//   - Errors carry the status to answer with: 400, 413, 414, 431, 501 or 505; the connection then closes.
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
  std::size_t max_request_line = 8 * 1024;   // over it: 414
  std::size_t max_head_bytes = 32 * 1024;    // request line + headers; over it: 431
  std::uint64_t max_body_bytes = 64ull << 20;  // declared Content-Length over it: 413
};

struct request_head {
  http::method method = method::other;
  std::string_view method_name;
  std::string_view target;  // as sent (origin-form)
  std::string_view path;    // target up to '?'
  std::string_view query;   // after '?', without it; empty if none
  std::uint8_t version_minor = 1;  // HTTP/1.<minor>
  header headers[max_headers];
  std::size_t header_count = 0;
  body_framing framing = body_framing::none;
  std::uint64_t content_length = 0;  // when framing == content_length
  bool keep_alive = true;            // from version + Connection header (RFC 9112 9.3)
  bool expect_continue = false;      // Expect: 100-continue

  // First header with this name (ASCII case-insensitive), or nullptr.
  const header* find(std::string_view name) const;
};

enum class parse_status : std::uint8_t { complete, need_more, error };

struct parse_result {
  parse_status status = parse_status::need_more;
  std::size_t consumed = 0;      // bytes of the head (incl. final CRLF) when complete
  int error_status = 0;          // when error: 400, 413, 414, 431, 501, 505
  std::string_view reason;       // when error: short static text
};

parse_result parse_request_head(std::string_view buf, request_head& out, const parser_limits& limits = {});

// Incremental chunked-body decoder (RFC 9112 7.1), trailers parsed and ignored. Feed it bytes; it
// reports how many it consumed and hands out decoded data as views into the input.
class chunked_decoder {
 public:
  struct step {
    parse_status status = parse_status::need_more;  // complete once the last chunk and trailers are read
    std::size_t consumed = 0;                       // input bytes used by this call
    int error_status = 0;
    std::string_view reason;
  };
  // Decodes as much of `in` as possible; decoded body bytes are passed to `sink(std::string_view)`.
  template <class Sink>
  step feed(std::string_view in, Sink&& sink);
  void reset();
  std::uint64_t decoded_bytes() const { return total_; }

 private:
  // implementation state (implementer's choice)
  std::uint64_t total_ = 0;
};

}  // namespace weir::http
