#include "base/base64.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace weir {
namespace {

constexpr std::string_view standard = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view url_safe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr std::array<std::int8_t, 256> decode_table(std::string_view alphabet) {
  std::array<std::int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (std::size_t i = 0; i < alphabet.size(); ++i)
    t[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
  return t;
}
constexpr auto standard_values = decode_table(standard);
constexpr auto url_safe_values = decode_table(url_safe);

// Groups of 3 bytes become 4 characters; a last group of 1 or 2 bytes becomes 2 or 3 characters, then
// '=' padding to 4 when `pad`.
std::string encode(std::string_view bytes, std::string_view alphabet, bool pad) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t j = 0; j < 3; ++j)
      v = (v << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0u);
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    if (n > 1) out.push_back(alphabet[(v >> 6) & 63]);
    if (n > 2) out.push_back(alphabet[v & 63]);
    if (pad) out.append(3 - n, '=');
  }
  return out;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  return encode(bytes, standard, true);
}

result<std::string> base64_decode(std::string_view text) {
  std::string clean;
  clean.reserve(text.size());
  for (const char c : text) {
    if (c != '\r' && c != '\n') clean.push_back(c);
  }
  if (clean.size() % 4 != 0) return error{1, "base64: length is not a multiple of 4"};
  std::string out;
  out.reserve(clean.size() / 4 * 3);
  for (std::size_t i = 0; i < clean.size(); i += 4) {
    const bool last = i + 4 == clean.size();
    int pad = 0;
    std::uint32_t v = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const char c = clean[i + j];
      if (c == '=') {
        // RFC 4648 3.2: padding only at the end of the last quantum, at most two.
        if (!last || j < 2) return error{1, "base64: misplaced padding"};
        ++pad;
        v <<= 6;
        continue;
      }
      if (pad > 0) return error{1, "base64: data after padding"};
      const auto d = standard_values[static_cast<unsigned char>(c)];
      if (d < 0) return error{1, "base64: a byte outside the alphabet"};
      v = (v << 6) | static_cast<std::uint32_t>(d);
    }
    out.push_back(static_cast<char>((v >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((v >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(v & 0xff));
  }
  return out;
}

std::string base64url_encode(std::string_view bytes) {
  return encode(bytes, url_safe, false);
}

std::optional<std::string> base64url_decode(std::string_view text) {
  if (text.size() % 4 == 1) return std::nullopt;  // 6 bits cannot end a byte string
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = url_safe_values[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  // The bits left over must be zero: otherwise two texts would decode to the same bytes.
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

}  // namespace weir
