// Small wrappers over OpenSSL used by the signing key and the token signer: base64url (RFC 4648 5,
// unpadded), SHA-256, HMAC-SHA256, a CSPRNG, hex. Thread-safe (OpenSSL 3 one-shot functions).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace weir::subscriptions {

// RFC 4648 section 5 alphabet, no '=' padding (as JWK and the Webhook-Signature header require).
std::string base64url_encode(std::string_view bytes);
// Rejects padding, characters outside the alphabet and impossible lengths.
std::optional<std::string> base64url_decode(std::string_view text);

std::string sha256(std::string_view data);                             // 32 raw bytes
std::string hmac_sha256(std::string_view key, std::string_view data);  // 32 raw bytes
std::string random_bytes(std::size_t n);  // from RAND_bytes; aborts if the CSPRNG fails
std::string to_hex(std::string_view bytes);
// Constant-time equality for MACs.
bool equal_constant_time(std::string_view a, std::string_view b);

}  // namespace weir::subscriptions
