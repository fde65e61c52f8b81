#include "subscriptions/control_codec.h"

#include <cstdint>
#include <limits>
#include <string_view>

#include "base/assert.h"

namespace weir::subscriptions {
namespace {

error malformed(const char* what) {
  return error{1, std::string("control message: ") + what};
}

void put_le(std::vector<std::byte>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(std::byte(static_cast<std::uint8_t>(v >> (8 * i))));
}

void put_string(std::vector<std::byte>& out, std::string_view s) {
  WEIR_ASSERT(s.size() <= std::numeric_limits<std::uint32_t>::max(), "control string of {} bytes", s.size());
  put_le(out, s.size(), 4);
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

class reader {
 public:
  explicit reader(std::span<const std::byte> in) : in_(in) {}
  bool le(std::uint64_t& v, std::size_t bytes) {
    if (in_.size() - pos_ < bytes) return false;
    v = 0;
    for (std::size_t i = 0; i < bytes; ++i)
      v |= std::uint64_t(std::to_integer<std::uint8_t>(in_[pos_ + i])) << (8 * i);
    pos_ += bytes;
    return true;
  }
  bool string(std::string& out) {
    std::uint64_t n = 0;
    if (!le(n, 4) || in_.size() - pos_ < n) return false;
    out.assign(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  bool at_end() const { return pos_ == in_.size(); }

 private:
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<std::byte> encode_control_request(const control_request& r) {
  std::vector<std::byte> out;
  out.reserve(1 + 5 * 4 + r.root.size() + r.rest.size() + r.origin.size() + r.authorization.size() +
              r.body.size());
  put_le(out, static_cast<std::uint8_t>(r.method), 1);
  put_string(out, r.root);
  put_string(out, r.rest);
  put_string(out, r.origin);
  put_string(out, r.authorization);
  put_string(out, r.body);
  return out;
}

result<owned_control_request> decode_control_request(std::span<const std::byte> bytes) {
  reader in(bytes);
  owned_control_request r;
  std::uint64_t m = 0;
  if (!in.le(m, 1)) return malformed("empty request");
  if (m > static_cast<std::uint8_t>(http::method::other)) return malformed("unknown method");
  r.method = static_cast<http::method>(m);
  if (!in.string(r.root) || !in.string(r.rest) || !in.string(r.origin) || !in.string(r.authorization) ||
      !in.string(r.body)) {
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
  put_string(out, r.content_type);
  put_le(out, r.headers.size(), 2);
  for (const auto& [name, value] : r.headers) {
    put_string(out, name);
    put_string(out, value);
  }
  put_string(out, r.body);
  return out;
}

result<control_response> decode_control_response(std::span<const std::byte> bytes) {
  reader in(bytes);
  control_response r;
  std::uint64_t status = 0, headers = 0;
  if (!in.le(status, 2) || !in.string(r.content_type) || !in.le(headers, 2))
    return malformed("short response");
  if (status < 100 || status > 999) return malformed("bad status");
  r.status = static_cast<int>(status);
  for (std::uint64_t i = 0; i < headers; ++i) {
    std::string name, value;
    if (!in.string(name) || !in.string(value)) return malformed("short response header");
    r.headers.emplace_back(std::move(name), std::move(value));
  }
  if (!in.string(r.body)) return malformed("short response body");
  if (!in.at_end()) return malformed("trailing bytes after a response");
  return r;
}

}  // namespace weir::subscriptions
