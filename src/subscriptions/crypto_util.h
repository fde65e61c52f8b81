// Small wrappers over OpenSSL used by the signing key and the token signer: SHA-256, HMAC-SHA256, a
// CSPRNG, hex (base64url, RFC 4648 5 unpadded as JWK and Webhook-Signature want it: base/base64.h).
// Thread-safe (OpenSSL 3 one-shot functions).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/base64.h"

namespace weir::subscriptions {

std::string sha256(std::string_view data);                             // 32 raw bytes
std::string hmac_sha256(std::string_view key, std::string_view data);  // 32 raw bytes
std::string random_bytes(std::size_t n);  // from RAND_bytes; aborts if the CSPRNG fails
std::string to_hex(std::string_view bytes);
// Constant-time equality for MACs.
bool equal_constant_time(std::string_view a, std::string_view b);

}  // namespace weir::subscriptions
