// Parsers for the values of Durable Streams headers and query parameters (PROTOCOL.md 5, 13.2).
// Pure functions; nullopt means "malformed".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::protocol {

// Stream-TTL (5.1): a non-negative decimal integer, no sign, no leading zeros, no fraction/exponent.
std::optional<std::uint64_t> parse_ttl(std::string_view v);

// Stream-Expires-At (5.1): an RFC 3339 timestamp; returns Unix milliseconds.
std::optional<std::int64_t> parse_rfc3339_ms(std::string_view v);

// Producer-Epoch / Producer-Seq (5.2.1): digits only, at most 2^53-1.
std::optional<std::uint64_t> parse_producer_number(std::string_view v);

// Stream-Fork-Sub-Offset (4.2): a non-negative decimal integer without leading zeros.
std::optional<std::uint64_t> parse_sub_offset(std::string_view v);

// Stream-Closed (4.1): present only when exactly "true", case-insensitively.
bool is_true(std::string_view v);

// Percent-decoding (RFC 3986 2.1); nullopt on a malformed escape. `plus_is_space` for query values.
std::optional<std::string> percent_decode(std::string_view v, bool plus_is_space);

// A query string split into decoded name/value pairs, in order.
struct query_param {
  std::string name;
  std::string value;
};
std::optional<std::vector<query_param>> parse_query(std::string_view query);

// Stream path checks (PROTOCOL.md 12.2): absolute, no `.`/`..` segments (raw or percent-encoded), no
// control characters, no malformed escapes.
enum class path_check { ok, bad, too_long };
path_check check_stream_path(std::string_view path, std::size_t max_length);

// Content-Type (RFC 9110 8.3.1): type "/" subtype *( OWS ";" OWS [ name "=" ( token / quoted-string ) ] ).
bool valid_media_type(std::string_view v);

// Host as it may be copied into a URL the server hands out (Location, callback_url, jwks_url): a DNS
// name or IPv4 address (letters, digits, '-', '.', '_') or an [IPv6] literal, then an optional ":port"
// (1-5 digits). Stricter than RFC 3986 reg-name on purpose: no percent-encoding or sub-delims.
bool valid_url_host(std::string_view v);

// A public URL of the server as URLs it hands out start with: "http://" or "https://", then a
// valid_url_host, nothing after it (no path, no trailing slash).
bool valid_origin(std::string_view v);

// True when a segment of the percent-decoded `path` equals `__ds` (see split_reserved_path).
bool has_reserved_segment(std::string_view decoded_path);

// The server's own paths (/healthz, /metrics, and what lies under them): never streams. `decoded_path`
// is percent-decoded.
bool is_server_path(std::string_view decoded_path);

// True when a path segment equals `__ds` (the reserved subscription prefix, PROTOCOL.md 6).
// `root` gets the path up to and including the '/' before it, `rest` what follows "__ds/".
bool split_reserved_path(std::string_view path, std::string_view& root, std::string_view& rest);

}  // namespace weir::protocol
