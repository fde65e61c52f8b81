#include "subscriptions/control_codec.h"

#include <cstdint>
#include <limits>
#include <string_view>

#include "base/assert.h"
#include "subscriptions/byte_codec.h"

namespace weir::subscriptions {
namespace {

using byte_codec::put_le;
using byte_codec::put_string;
using byte_codec::reader;

error malformed(const char* what) {
  return error{1, std::string("control message: ") + what};
}

// Every string of a request or response: u32 length, bytes.
constexpr int string_length = 4;

}  // namespace

std::vector<std::byte> encode_control_request(const control_request& r) {
  std::vector<std::byte> out;
  out.reserve(1 + 5 * 4 + r.root.size() + r.rest.size() + r.origin.size() + r.authorization.size() +
              r.body.size());
  put_le(out, static_cast<std::uint8_t>(r.method), 1);
  put_string(out, r.root, string_length);
  put_string(out, r.rest, string_length);
  put_string(out, r.origin, string_length);
  put_string(out, r.authorization, string_length);
  put_string(out, r.body, string_length);
  return out;
}

result<owned_control_request> decode_control_request(std::span<const std::byte> bytes) {
  reader in(bytes);
  owned_control_request r;
  std::uint64_t m = 0;
  if (!in.le(m, 1)) return malformed("empty request");
  if (m > static_cast<std::uint8_t>(http::method::other)) return malformed("unknown method");
  r.method = static_cast<http::method>(m);
  if (!in.string(r.root, string_length) || !in.string(r.rest, string_length) ||
      !in.string(r.origin, string_length) || !in.string(r.authorization, string_length) ||
      !in.string(r.body, string_length)) {
    return malformed("short request");
  }
  if (!in.at_end()) return malformed("trailing bytes after a request");
  return r;
}

std::vector<std::byte> encode_control_response(const control_response& r) {
  WEIR_ASSERT(r.status >= 100 && r.status <= 999, "control response status {}", r.status);
  WEIR_ASSERT(r.headers.size() <= std::numeric_limits<std::uint16_t>::max(), "{} headers", r.headers.size());
  std::vector<std::byte> out;
  put_le(out, static_cast<std::uint64_t>(r.status), 2);
  put_string(out, r.content_type, string_length);
  put_le(out, r.headers.size(), 2);
  for (const auto& [name, value] : r.headers) {
    put_string(out, name, string_length);
    put_string(out, value, string_length);
  }
  put_string(out, r.body, string_length);
  return out;
}

result<control_response> decode_control_response(std::span<const std::byte> bytes) {
  reader in(bytes);
  control_response r;
  std::uint64_t status = 0, headers = 0;
  if (!in.le(status, 2) || !in.string(r.content_type, string_length) || !in.le(headers, 2))
    return malformed("short response");
  if (status < 100 || status > 999) return malformed("bad status");
  r.status = static_cast<int>(status);
  for (std::uint64_t i = 0; i < headers; ++i) {
    std::string name, value;
    if (!in.string(name, string_length) || !in.string(value, string_length))
      return malformed("short response header");
    r.headers.emplace_back(std::move(name), std::move(value));
  }
  if (!in.string(r.body, string_length)) return malformed("short response body");
  if (!in.at_end()) return malformed("trailing bytes after a response");
  return r;
}

}  // namespace weir::subscriptions
