// crypto: the small OpenSSL 3 helpers of the auth module: SHA-256 digests, hex, constant-time
// comparison, a CSPRNG. Pure and thread-safe. base64url (RFC 4648 5, as JWS and JWK use it) is
// base/base64.h's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/base64.h"

namespace weir::auth {

using digest = std::array<std::uint8_t, 32>;

digest sha256(std::string_view data);
std::string to_hex(const digest& d);
// 64 hex digits (either case); nullopt otherwise.
std::optional<digest> digest_from_hex(std::string_view hex);
// Constant-time equality (CRYPTO_memcmp): the time does not depend on where the digests differ.
bool equal_constant_time(const digest& a, const digest& b);

// `n` bytes from the OpenSSL CSPRNG; throws std::runtime_error if it fails (start-up tools only).
std::string random_bytes(std::size_t n);

}  // namespace weir::auth
