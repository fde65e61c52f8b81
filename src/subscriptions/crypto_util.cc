#include "subscriptions/crypto_util.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <cstdint>

#include "base/assert.h"

namespace weir::subscriptions {
namespace {
constexpr char k_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int decode_char(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}
}  // namespace

std::string base64url_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    std::uint32_t v = (std::uint32_t(std::uint8_t(bytes[i])) << 16) |
                      (std::uint32_t(std::uint8_t(bytes[i + 1])) << 8) | std::uint8_t(bytes[i + 2]);
    out += k_alphabet[(v >> 18) & 63];
    out += k_alphabet[(v >> 12) & 63];
    out += k_alphabet[(v >> 6) & 63];
    out += k_alphabet[v & 63];
  }
  std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    std::uint32_t v = std::uint32_t(std::uint8_t(bytes[i])) << 16;
    out += k_alphabet[(v >> 18) & 63];
    out += k_alphabet[(v >> 12) & 63];
  } else if (rest == 2) {
    std::uint32_t v =
        (std::uint32_t(std::uint8_t(bytes[i])) << 16) | (std::uint32_t(std::uint8_t(bytes[i + 1])) << 8);
    out += k_alphabet[(v >> 18) & 63];
    out += k_alphabet[(v >> 12) & 63];
    out += k_alphabet[(v >> 6) & 63];
  }
  return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
  if (text.size() % 4 == 1) return std::nullopt;  // no whole byte fits in one sextet
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int d = decode_char(c);
    if (d < 0) return std::nullopt;
    acc = (acc << 6) | std::uint32_t(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  // Leftover bits must be zero, or two encodings would decode to the same bytes.
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

std::string sha256(std::string_view data) {
  std::array<unsigned char, 32> md{};
  unsigned int len = 0;
  int ok = EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr);
  WEIR_ASSERT(ok == 1 && len == 32, "EVP_Digest(sha256) failed: ok={} len={}", ok, len);
  return std::string(reinterpret_cast<const char*>(md.data()), len);
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  std::array<unsigned char, 32> md{};
  unsigned int len = 0;
  auto* r = HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
                 reinterpret_cast<const unsigned char*>(data.data()), data.size(), md.data(), &len);
  WEIR_ASSERT(r != nullptr && len == 32, "HMAC(sha256) failed: len={}", len);
  return std::string(reinterpret_cast<const char*>(md.data()), len);
}

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  int ok = RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n));
  WEIR_ASSERT(ok == 1, "RAND_bytes({}) failed", n);
  return out;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    out += digits[(std::uint8_t(c) >> 4) & 15];
    out += digits[std::uint8_t(c) & 15];
  }
  return out;
}

bool equal_constant_time(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace weir::subscriptions
