#include "cli/base64.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace weir::cli {
namespace {

constexpr std::array<std::int8_t, 256> make_table() {
  std::array<std::int8_t, 256> t{};
  for (auto& v : t) v = -1;
  constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (std::size_t i = 0; i < alphabet.size(); ++i)
    t[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
  return t;
}

constexpr auto table = make_table();

}  // namespace

std::string base64_encode(std::string_view bytes) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t j = 0; j < 3; ++j) {
      v = (v << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0u);
    }
    out.push_back(alphabet[(v >> 18) & 63]);
    out.push_back(alphabet[(v >> 12) & 63]);
    out.push_back(n > 1 ? alphabet[(v >> 6) & 63] : '=');
    out.push_back(n > 2 ? alphabet[v & 63] : '=');
  }
  return out;
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
      const auto d = table[static_cast<unsigned char>(c)];
      if (d < 0) return error{1, "base64: a byte outside the alphabet"};
      v = (v << 6) | static_cast<std::uint32_t>(d);
    }
    out.push_back(static_cast<char>((v >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((v >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(v & 0xff));
  }
  return out;
}

}  // namespace weir::cli
