// HTTP/1.1 response parser (RFC 9112) for weir's own HTTP client (the benchmark tool and tests).
// Same style as the request parser: complete / need_more / error, views into the caller's bytes,
// no copies, no allocation.
//
// Two layers:
//   - parse_response_head(): stateless, like parse_request_head(): call it again from the start of the
//     response on a longer buffer after need_more.
//   - response_parser: head then body (Content-Length, chunked, or read until close; none for HEAD,
//     1xx, 204 and 304, RFC 9112 6.3). The caller tells it the request method with reset().
//
// Driving a response_parser (the caller keeps unconsumed bytes and drops consumed ones):
//     p.reset(method::get);
//     for (;;) {
//       auto s = p.next(buf);           // or p.feed(buf, sink) to take all body spans at once
//       // the call that finishes the head consumes the head and nothing more, so head() views are
//       // still valid here; body bytes of this call are in s.body (a view into buf)
//       buf.erase(0, s.consumed);
//       if (s.status != parse_status::need_more) break;   // complete or error
//       if (s.consumed == 0) read_more(buf);              // on EOF: s = p.finish()
//     }
// A 1xx response completes with its head; read head().status and reset() again for the final one.
//
// Threading: a response_parser belongs to one connection and is used on one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "http/request_parser.h"

namespace weir::http {

enum class response_framing : std::uint8_t { none, content_length, chunked, until_close };

struct response_head {
  std::uint8_t version_minor = 1;  // HTTP/1.<minor>: 0 or 1
  int status = 0;                  // 100..999
  std::string_view reason;         // reason-phrase, may be empty
  header headers[max_headers];
  std::size_t header_count = 0;
  response_framing framing = response_framing::none;
  std::uint64_t content_length = 0;  // the Content-Length value, when one was sent (even for HEAD/304)
  bool has_content_length = false;
  bool keep_alive = true;  // version + Connection (RFC 9112 9.3); false when the body runs until close

  // First header with this name (ASCII case-insensitive), or nullptr.
  const header* find(std::string_view name) const;
};

// Parses one response head at the start of `buf`. `request_method` decides whether a body follows
// (HEAD: never). Errors: 400 malformed, 431 over limits.max_head_bytes (the status line is bounded by
// limits.max_request_line, also 431), 413 Content-Length over limits.max_body_bytes, 501 a transfer
// coding other than chunked, 505 a version other than HTTP/1.x.
parse_result parse_response_head(std::string_view buf, response_head& out,
                                 method request_method = method::get, const parser_limits& limits = {});

class response_parser {
 public:
  struct step {
    parse_status status = parse_status::need_more;  // complete: head and body of this response are read
    std::size_t consumed = 0;                       // input bytes used by this call
    std::string_view body;                          // body bytes decoded by this call (a view into the input)
    int error_status = 0;
    std::string_view reason;
  };

  explicit response_parser(const parser_limits& limits = {}) : limits_(limits) {}

  // Prepares for the next response on the connection.
  void reset(method request_method = method::get);

  // Consumes the head (alone), or body bytes up to the end of this response. See the loop above.
  step next(std::string_view in);

  // Calls next() until it needs more input or the response ends, passing body spans to sink.
  template <class Sink>
  step feed(std::string_view in, Sink&& sink) {
    step total;
    for (;;) {
      const step s = next(in.substr(total.consumed));
      total.consumed += s.consumed;
      if (!s.body.empty()) sink(s.body);
      if (s.status != parse_status::need_more || s.consumed == 0) {
        total.status = s.status;
        total.error_status = s.error_status;
        total.reason = s.reason;
        return total;
      }
    }
  }

  // The peer closed the connection: completes a body read until close, otherwise an error
  // (truncated response) unless the response was already complete.
  step finish();

  bool head_complete() const { return phase_ != phase::head && phase_ != phase::failed; }
  bool done() const { return phase_ == phase::done; }
  // Valid once head_complete(); its views point into the buffer given to the call that read the head.
  const response_head& head() const { return head_; }
  std::uint64_t body_bytes() const { return body_bytes_; }

 private:
  enum class phase : std::uint8_t { head, length, chunked, until_close, done, failed };
  step fail(int status, std::string_view reason);

  parser_limits limits_;
  response_head head_;
  chunked_decoder chunked_;
  std::uint64_t left_ = 0;  // Content-Length bytes still due
  std::uint64_t body_bytes_ = 0;
  method method_ = method::get;
  phase phase_ = phase::head;
  int error_status_ = 0;
  std::string_view error_reason_;
};

}  // namespace weir::http
