// response: an HTTP answer built by the protocol layer, owning its header strings and body, so it can
// be built on a stream's owner core and sent from the connection's core.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/errors.h"
#include "streams/types.h"

namespace weir::protocol {

// Header names (PROTOCOL.md 13.2).
namespace hdr {
inline constexpr std::string_view next_offset = "Stream-Next-Offset";
inline constexpr std::string_view up_to_date = "Stream-Up-To-Date";
inline constexpr std::string_view closed = "Stream-Closed";
inline constexpr std::string_view cursor = "Stream-Cursor";
inline constexpr std::string_view ttl = "Stream-TTL";
inline constexpr std::string_view expires_at = "Stream-Expires-At";
inline constexpr std::string_view seq = "Stream-Seq";
inline constexpr std::string_view forked_from = "Stream-Forked-From";
inline constexpr std::string_view fork_offset = "Stream-Fork-Offset";
inline constexpr std::string_view fork_sub_offset = "Stream-Fork-Sub-Offset";
inline constexpr std::string_view producer_id = "Producer-Id";
inline constexpr std::string_view producer_epoch = "Producer-Epoch";
inline constexpr std::string_view producer_seq = "Producer-Seq";
inline constexpr std::string_view producer_expected_seq = "Producer-Expected-Seq";
inline constexpr std::string_view producer_received_seq = "Producer-Received-Seq";
inline constexpr std::string_view sse_encoding = "Stream-SSE-Data-Encoding";
}  // namespace hdr

struct response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  void add(std::string_view name, std::string value) {
    headers.emplace_back(std::string(name), std::move(value));
  }
};

// CORS (any origin) and browser security headers (PROTOCOL.md 12.7), on every response.
void add_common_headers(response& r);

// An error: the status and reason of `s`, as text/plain, plus the common headers.
response error_response(http_status s);

// The answer to a CORS preflight (OPTIONS).
response preflight_response();

// ETag (PROTOCOL.md 10.1): identifies the stream incarnation and the byte range; varies with closure.
std::string make_etag(std::uint64_t generation, std::string_view start, streams::stream_offset end,
                      bool closed);

// True when an If-None-Match header value matches `etag` (a list, or `*`; RFC 9110 13.1.2).
bool etag_matches(std::string_view if_none_match, std::string_view etag);

inline constexpr std::string_view cache_catch_up = "public, max-age=60, stale-while-revalidate=300";

}  // namespace weir::protocol
