// byte_codec: the little-endian primitives of the subscription messages that cross nodes (control_codec.h,
// a leader call and its answer; subscription_replica.h, a raft entry): fixed-width unsigned integers, and
// strings as a fixed-width length then the bytes. The reader never reads past its input. Pure; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/assert.h"

namespace weir::subscriptions::byte_codec {

// The low `bytes` bytes of `v` (1..8), least significant first.
inline void put_le(std::vector<std::byte>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(std::byte(static_cast<std::uint8_t>(v >> (8 * i))));
}

// The bytes of `s`, without a length.
inline void put_bytes(std::vector<std::byte>& out, std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

// `s` after its length in `length_bytes` bytes (1..8); the length must fit.
inline void put_string(std::vector<std::byte>& out, std::string_view s, int length_bytes) {
  WEIR_ASSERT(length_bytes >= 8 || (std::uint64_t(s.size()) >> (8 * length_bytes)) == 0,
              "string of {} bytes with a {}-byte length", s.size(), length_bytes);
  put_le(out, s.size(), length_bytes);
  put_bytes(out, s);
}

// Reads what the put_ functions write. A read that would pass the end returns false and consumes nothing.
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
  bool string(std::string& out, std::size_t length_bytes) {
    const std::size_t start = pos_;
    std::uint64_t n = 0;
    if (!le(n, length_bytes)) return false;
    if (in_.size() - pos_ < n) {
      pos_ = start;
      return false;
    }
    out.assign(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  // The bytes not read yet.
  std::span<const std::byte> rest() const { return in_.subspan(pos_); }
  bool at_end() const { return pos_ == in_.size(); }

 private:
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
};

}  // namespace weir::subscriptions::byte_codec
