// h2_session's stream (h2_session.cc, h2_stream.cc): one request/response on an HTTP/2 connection.
// Internal to the http module. Loop thread only, as its session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "http/h2_request_check.h"
#include "http/h2_session.h"
#include "io/byte_buffer.h"

namespace weir::http {

// Closed streams are kept for reuse (h2_stream.cc) with at most this much room in their field list and
// their body buffers.
inline constexpr std::size_t keep_fields_bytes = 4096, keep_out_bytes = 4096;

// One request/response on the session: the request as it arrives, then the response body not yet framed.
// The plain fields are a base of their own so that a recycled stream is reset with one assignment
// (recycle()), its buffers cleared in place rather than swapped with those of a fresh temporary.
struct h2_stream_state {
  std::int32_t id = 0;
  std::int64_t opened_ms = 0;
  std::uint32_t pseudo[4][2] = {};  // :method, :path, :authority, :scheme (offset, length) in `fields`
  std::size_t list_bytes = 0;       // RFC 9113 6.5.2 size of the field list so far
  bool head_too_large = false;
  bool headers_done = false;
  bool expect_continue = false;
  bool malformed = false;         // RFC 9113 8.1.1: reset with PROTOCOL_ERROR, never dispatched
  h2_request_check check;         // the request's fields, content-length and DATA (RFC 9113 8.1.1, 8.2, 8.3)
  std::size_t body_reserved = 0;  // of the node's body budget
  bool request_complete = false;  // END_STREAM received
  bool refused = false;           // answered before its body was read (413, 503): body bytes dropped

  // Exchange.
  bool dispatched = false;
  bool finished = false;  // respond() or end() called: the exchange is over for the handler
  bool is_head = false;
  bool body_allowed = false;
  bool eof = false;  // no bytes follow those in `out`
  bool dropped = false;
  std::size_t drain_low = 0;

  // Observer figures.
  std::uint8_t tag = 0;
  int status = 0;
  std::uint64_t start_ns = 0, head_ns = 0, bytes_in = 0, bytes_out = 0;
};
static_assert(std::is_trivially_copyable_v<h2_stream_state>);

// A regular request field in the stream's `fields`: the name at `offset`, the value right after it.
struct h2_field_span {
  std::uint32_t offset, name_size, value_size;
};

struct h2_session::stream : h2_stream_state {
  // Request fields: pseudo-header values and regular names and values back to back in `fields`
  // (written in place, no string per field); `spans` locates the regular ones.
  io::byte_buffer fields;
  std::vector<h2_field_span> spans;
  io::byte_buffer body;
  io::byte_buffer out;  // response body bytes not framed yet
  std::function<void()> on_close;
  std::function<void()> on_drain;
  std::string method, path;  // for the observer
  std::string head;          // the response's field names and values nghttp2 frames in place (submit)

  std::string_view at(const std::uint32_t (&p)[2]) const { return {fields.data() + p[0], p[1]}; }
  // Appends a then b to `fields`; returns where a begins.
  std::uint32_t keep(std::string_view a, std::string_view b) {
    const auto off = static_cast<std::uint32_t>(fields.size());
    fields.append(a);
    fields.append(b);
    return off;
  }
};

}  // namespace weir::http
