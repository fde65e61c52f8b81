// response_head: the few facts the benchmark client needs from an HTTP/1.1 response head (RFC 9112
// 4, 6.3): status, body framing, keep-alive, and the Durable Streams headers it checks.
//
// Interim: a small parser of our own until src/http/response_parser.h (the parser helper's) lands;
// then this file becomes a thin adapter over it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weir::bench {

enum class response_framing : std::uint8_t { none, content_length, chunked, until_close };

struct response_head {
  int status = 0;
  response_framing framing = response_framing::until_close;
  std::uint64_t content_length = 0;
  bool keep_alive = true;
  std::string_view next_offset;   // Stream-Next-Offset (a view into the parsed buffer)
  std::string_view content_type;  // Content-Type
};

enum class head_status : std::uint8_t { complete, need_more, error };

// Parses the head at the start of `buf`. On complete, `consumed` is the head's size including the
// final CRLF. `request_was_head`: a response to HEAD has no body whatever it says (RFC 9112 6.3).
head_status parse_response_head(std::string_view buf, response_head& out, std::size_t& consumed,
                                bool request_was_head = false);

}  // namespace weir::bench
