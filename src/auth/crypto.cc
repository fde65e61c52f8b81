#include "auth/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace weir::auth {

digest sha256(std::string_view data) {
  // Fetched once (OpenSSL 3): EVP_sha256() would look the implementation up again on every call, under
  // the provider store's lock, on the request path of every core.
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
  digest d{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), d.data(), &len, md ? md : EVP_sha256(), nullptr);
  return d;
}

std::string to_hex(const digest& d) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (std::uint8_t b : d) {
    out.push_back(hex[b >> 4]);
    out.push_back(hex[b & 0xf]);
  }
  return out;
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<digest> digest_from_hex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  digest d{};
  for (std::size_t i = 0; i < 32; ++i) {
    int h = hex_value(hex[2 * i]), l = hex_value(hex[2 * i + 1]);
    if (h < 0 || l < 0) return std::nullopt;
    d[i] = static_cast<std::uint8_t>(h * 16 + l);
  }
  return d;
}

bool equal_constant_time(const digest& a, const digest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string random_bytes(std::size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    throw std::runtime_error("the OpenSSL random generator failed");
  }
  return out;
}

}  // namespace weir::auth
