#include "subscriptions/crypto_util.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <cstdint>

#include "base/assert.h"

namespace weir::subscriptions {

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
