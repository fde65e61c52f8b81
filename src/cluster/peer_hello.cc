#include "cluster/peer_hello.h"

#include <algorithm>
#include <cstring>

#include "storage/crc32c.h"
#include "storage/log_format.h"

namespace weir::cluster {
namespace {
using storage::format::get_u32;
using storage::format::get_u64;
using storage::format::put_u32;
using storage::format::put_u64;

constexpr std::array<char, 8> hello_magic = {'w', 'e', 'i', 'r', 'p', 'e', 'e', 'r'};
constexpr std::array<char, 8> refusal_magic = {'w', 'e', 'i', 'r', 'n', 'o', 'p', 'e'};
constexpr std::size_t hello_crc_at = peer_hello_size - 4;

std::uint16_t get_u16(const std::byte* p) {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(p[0]) | std::to_integer<unsigned>(p[1]) << 8);
}
}  // namespace

std::array<std::byte, peer_hello_size> encode_hello(const peer_hello& h) {
  std::array<std::byte, peer_hello_size> out{};
  std::memcpy(out.data(), hello_magic.data(), hello_magic.size());
  put_u32(out.data() + 8, peer_link_version);
  put_u64(out.data() + 12, h.sender);
  put_u32(out.data() + 20, (h.link_lane & 0xffff) | h.core_lane << 16);
  put_u32(out.data() + 24, h.core_lanes);
  put_u64(out.data() + 28, h.incarnation);
  put_u32(out.data() + hello_crc_at, storage::crc32c(std::span(out.data(), hello_crc_at)));
  return out;
}

bool hello_rejected_early(std::span<const std::byte> b) {
  const std::size_t n = std::min(b.size(), hello_magic.size());
  if (n == 0) return false;  // (memcmp must not see an empty span's null pointer)
  if (std::memcmp(b.data(), hello_magic.data(), n) != 0) return true;
  return b.size() >= 12 && get_u32(b.data() + 8) != peer_link_version;
}

result<peer_hello> decode_hello(std::span<const std::byte> b) {
  if (b.size() < peer_hello_size || std::memcmp(b.data(), hello_magic.data(), hello_magic.size()) != 0)
    return make_error(hello_errc::bad_magic, "not a weir peer hello");
  if (const std::uint32_t v = get_u32(b.data() + 8); v != peer_link_version) {
    return make_error(hello_errc::bad_version, "peer-link version " + std::to_string(v) +
                                                   ", this node speaks " + std::to_string(peer_link_version));
  }
  if (get_u32(b.data() + hello_crc_at) != storage::crc32c(b.first(hello_crc_at)))
    return make_error(hello_errc::bad_checksum, "a hello with a bad checksum");
  peer_hello h;
  h.sender = get_u64(b.data() + 12);
  const std::uint32_t lanes = get_u32(b.data() + 20);
  h.link_lane = lanes & 0xffff;
  h.core_lane = lanes >> 16;
  h.core_lanes = get_u32(b.data() + 24);
  h.incarnation = get_u64(b.data() + 28);
  if (h.link_lane > 1) return make_error(hello_errc::bad_lane, "link lane " + std::to_string(h.link_lane));
  return h;
}

std::vector<std::byte> encode_refusal(const peer_refusal& r) {
  const std::size_t text = std::min(r.text.size(), max_refusal_text);
  std::vector<std::byte> out(refusal_fixed_size + text);
  std::byte* p = out.data();
  std::memcpy(p, refusal_magic.data(), refusal_magic.size());
  put_u32(p + 8, static_cast<std::uint32_t>(r.why));
  put_u64(p + 12, r.refused_by);
  put_u64(p + 20, r.remembered);
  put_u64(p + 28, r.presented);
  p[36] = static_cast<std::byte>(text & 0xff);
  p[37] = static_cast<std::byte>(text >> 8);
  std::memcpy(p + 38, r.text.data(), text);
  put_u32(p + 38 + text, storage::crc32c(std::span(p, 38 + text)));
  return out;
}

result<refusal_read> decode_refusal(std::span<const std::byte> b) {
  const std::size_t n = std::min(b.size(), refusal_magic.size());
  if (n == 0) return refusal_read{};  // (memcmp must not see an empty span's null pointer)
  if (std::memcmp(b.data(), refusal_magic.data(), n) != 0)
    return make_error(hello_errc::bad_magic, "not a weir peer-link refusal");
  if (b.size() < 38) return refusal_read{};
  const std::size_t text = get_u16(b.data() + 36);
  if (text > max_refusal_text)
    return make_error(hello_errc::bad_magic, "a refusal text of " + std::to_string(text) + " bytes");
  const std::size_t size = refusal_fixed_size + text;
  if (b.size() < size) return refusal_read{};
  if (get_u32(b.data() + 38 + text) != storage::crc32c(b.first(38 + text)))
    return make_error(hello_errc::bad_checksum, "a refusal with a bad checksum");
  const std::uint32_t why = get_u32(b.data() + 8);
  if (why != static_cast<std::uint32_t>(peer_refusal::reason::other_incarnation))
    return make_error(hello_errc::bad_magic, "a refusal of unknown reason " + std::to_string(why));
  peer_refusal r;
  r.why = peer_refusal::reason::other_incarnation;
  r.refused_by = get_u64(b.data() + 12);
  r.remembered = get_u64(b.data() + 20);
  r.presented = get_u64(b.data() + 28);
  r.text.assign(reinterpret_cast<const char*>(b.data() + 38), text);
  return refusal_read{std::move(r), size};
}

}  // namespace weir::cluster
