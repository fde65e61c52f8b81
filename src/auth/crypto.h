// crypto: the small OpenSSL 3 helpers of the auth module: SHA-256 digests, hex, unpadded base64url
// (RFC 4648 5, as JWS and JWK use it), constant-time comparison, a CSPRNG. Pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weir::auth {

using digest = std::array<std::uint8_t, 32>;

digest sha256(std::string_view data);
std::string to_hex(const digest& d);
// 64 hex digits (either case); nullopt otherwise.
std::optional<digest> digest_from_hex(std::string_view hex);
// Constant-time equality (CRYPTO_memcmp): the time does not depend on where the digests differ.
bool equal_constant_time(const digest& a, const digest& b);

// RFC 4648 5 without padding.
std::string base64url_encode(std::string_view bytes);
// Strict: only the URL-safe alphabet, no padding, no whitespace, no impossible length, and the unused
// bits of the last character must be zero (so that one byte string has exactly one encoding).
std::optional<std::string> base64url_decode(std::string_view text);

// `n` bytes from the OpenSSL CSPRNG; throws std::runtime_error if it fails (start-up tools only).
std::string random_bytes(std::size_t n);

}  // namespace weir::auth
