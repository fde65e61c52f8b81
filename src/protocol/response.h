// response: an HTTP answer built by the protocol layer, owning its header strings and body, so it can
// be built on a stream's owner core and sent from the connection's core.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

// Text with static storage: a string literal or a constexpr string_view (header names, fixed values).
// The consteval constructors reject anything else at compile time, so a response never keeps a view
// of a temporary.
struct static_text {
  template <std::size_t N>
  consteval static_text(const char (&s)[N]) : view(s, N - 1) {}  // NOLINT(google-explicit-constructor)
  consteval static_text(std::string_view s) : view(s) {}         // NOLINT(google-explicit-constructor)
  std::string_view view;
};

// A response's headers cost no allocation per header: names and fixed values are views of static text,
// other values are copied into one buffer. The response can be moved to another core and sent there.
class response {
 public:
  int status = 200;
  std::string body;

  // A header whose value is copied.
  void add(static_text name, std::string_view value);
  // A header whose value is static text too (nothing copied).
  void add_static(static_text name, static_text value);

  std::size_t header_count() const { return count_; }
  std::string_view name(std::size_t i) const { return at(i).name; }
  std::string_view value(std::size_t i) const;
  // The first header called `name` (case-sensitive, as added), if any.
  std::optional<std::string_view> find(std::string_view name) const;

 private:
  struct field {
    std::string_view name;
    const char* literal = nullptr;  // the static value, or null: the value is text_[off, off + size)
    std::uint32_t off = 0;
    std::uint32_t size = 0;
  };
  static constexpr std::size_t inline_fields = 16;

  void push(field f);
  const field& at(std::size_t i) const { return i < inline_fields ? inline_[i] : more_[i - inline_fields]; }

  std::array<field, inline_fields> inline_{};
  std::vector<field> more_;  // beyond inline_fields (no response built here needs it)
  std::size_t count_ = 0;
  std::string text_;
};

// The headers a browser reads (Access-Control-Expose-Headers) and browser security headers
// (PROTOCOL.md 12.7), on every response. Access-Control-Allow-Origin depends on the request's Origin:
// protocol::add_cors_headers (cors.h) adds it when the response is sent (server/reply.h).
void add_common_headers(response& r);

// An error: the status and reason of `s`, as text/plain, plus the common headers and the headers that
// belong to the status (Allow, Retry-After). `detail`, when given, follows the reason ("reason: detail"):
// facts that help the client fix the request, never internals such as file names.
response error_response(http_status s, std::string_view detail = {});

// The answer to a CORS preflight (OPTIONS).
response preflight_response();

// ETag (PROTOCOL.md 10.1): identifies the stream incarnation and the byte range; varies with closure.
std::string make_etag(std::uint64_t generation, std::string_view start, streams::stream_offset end,
                      bool closed);

// True when an If-None-Match header value matches `etag` (a list, or `*`; RFC 9110 13.1.2).
bool etag_matches(std::string_view if_none_match, std::string_view etag);

inline constexpr std::string_view cache_catch_up = "public, max-age=60, stale-while-revalidate=300";

}  // namespace weir::protocol
