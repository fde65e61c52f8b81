// Little-endian fixed-width integers in and out of byte buffers, for the wire format and the node log
// record format. byte_reader never reads past its span: every get fails (returns false) instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace weir::raft {

class byte_writer {
 public:
  explicit byte_writer(std::vector<std::byte>& out) : out_(out) {}
  void u8(std::uint8_t v) { out_.push_back(std::byte{v}); }
  void u16(std::uint16_t v) { put(v, 2); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void bytes(std::span<const std::byte> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  void text(std::string_view s) {
    auto b = std::as_bytes(std::span<const char>(s.data(), s.size()));
    bytes(b);
  }
  std::size_t size() const { return out_.size(); }
  // Overwrites a u32 written earlier (a length or checksum known only at the end).
  void patch_u32(std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out_[at + i] = std::byte(static_cast<std::uint8_t>(v >> (8 * i)));
  }

 private:
  void put(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(std::byte(static_cast<std::uint8_t>(v >> (8 * i))));
  }
  std::vector<std::byte>& out_;
};

class byte_reader {
 public:
  explicit byte_reader(std::span<const std::byte> in) : in_(in) {}
  bool u8(std::uint8_t& v) {
    std::uint64_t x = 0;
    if (!get(x, 1)) return false;
    v = static_cast<std::uint8_t>(x);
    return true;
  }
  bool u16(std::uint16_t& v) {
    std::uint64_t x = 0;
    if (!get(x, 2)) return false;
    v = static_cast<std::uint16_t>(x);
    return true;
  }
  bool u32(std::uint32_t& v) {
    std::uint64_t x = 0;
    if (!get(x, 4)) return false;
    v = static_cast<std::uint32_t>(x);
    return true;
  }
  bool u64(std::uint64_t& v) { return get(v, 8); }
  // A view of the next n bytes (no copy).
  bool bytes(std::size_t n, std::span<const std::byte>& out) {
    if (n > remaining()) return false;
    out = in_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  std::size_t remaining() const { return in_.size() - pos_; }
  std::size_t position() const { return pos_; }

 private:
  bool get(std::uint64_t& v, int n) {
    if (remaining() < static_cast<std::size_t>(n)) return false;
    v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint64_t(std::to_integer<std::uint8_t>(in_[pos_ + i])) << (8 * i);
    pos_ += static_cast<std::size_t>(n);
    return true;
  }
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
};

}  // namespace weir::raft
