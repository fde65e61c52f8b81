// jwt: checks a compact JWS (RFC 7515 7.1) carrying JWT claims (RFC 7519) against a key_set. Only the
// asymmetric algorithms EdDSA, ES256 and RS256 are accepted, and each only with a key of its own type,
// so "none", HS256 keyed with a public key, or an alg header that does not fit the key all fail
// (RFC 8725 3.1, 3.2). The signature is checked before any claim is looked at. Pure: callable on any
// core with a shared key_set.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "auth/jwks.h"
#include "auth/scope.h"
#include "base/result.h"

namespace weir::auth {

// Why a token was refused. The reason texts (token_error_text) go to the client: they say what is
// wrong with the token, never anything about the keys or the configuration.
enum class token_error : std::uint8_t {
  malformed = 1,    // not three base64url parts, bad JSON, a claim of the wrong type
  too_long,         // longer than max_token_bytes
  unsupported_alg,  // none, HS*, PS*, anything but EdDSA/ES256/RS256; a "crit" header
  unknown_key,      // no key with the token's kid (or no kid and not exactly one key)
  alg_mismatch,     // the header's alg does not fit the key's type
  bad_signature,
  expired,
  not_yet_valid,
  wrong_issuer,
  wrong_audience,
  unknown_api_key,
  jwt_not_configured,
};
std::string_view token_error_text(token_error e);

// Bearer tokens longer than this are refused before any decoding (a header line is at most 8 KiB).
inline constexpr std::size_t max_token_bytes = 4096;

struct jwt_policy {
  std::string issuer;          // "iss" must equal it
  std::string audience;        // "aud" (a string, or an array of strings) must hold it
  std::int64_t leeway_s = 30;  // allowed clock skew for exp and nbf
};

struct jwt_claims {
  std::int64_t exp = 0;                  // Unix seconds (required)
  std::shared_ptr<const scope> granted;  // from the "scope" claim (empty when absent)
};

// `now_s`: Unix seconds. Errors carry a token_error as code.
result<jwt_claims> verify_jwt(std::string_view token, const key_set& keys, const jwt_policy& policy,
                              std::int64_t now_s);

}  // namespace weir::auth
