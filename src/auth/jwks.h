// jwks: the public keys JWTs are checked against, read from a local JWKS file (RFC 7517) that the
// operator keeps up to date (reloaded on SIGHUP by the node). Three key types, each tied to one JWS
// algorithm (RFC 7518 3, RFC 8037): OKP/Ed25519 <-> EdDSA, EC/P-256 <-> ES256, RSA (>= 2048 bits) <->
// RS256. Symmetric (`oct`) keys are skipped: a verifier that accepts HMAC with a public key is the
// classic algorithm-confusion hole. A key_set is immutable once loaded: shared between cores.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

using EVP_PKEY = struct evp_pkey_st;

namespace weir::auth {

enum class key_type : std::uint8_t { ed25519, p256, rsa };

// The JWS "alg" that a key type verifies: "EdDSA", "ES256", "RS256".
std::string_view alg_of(key_type t);

struct public_key {
  public_key(key_type t, EVP_PKEY* k) : type(t), pkey(k) {}
  ~public_key();
  public_key(const public_key&) = delete;
  public_key& operator=(const public_key&) = delete;

  key_type type;
  EVP_PKEY* pkey;  // owned
};

struct key_set {
  std::map<std::string, std::shared_ptr<const public_key>, std::less<>> by_kid;  // "" for a key without kid
  std::size_t skipped = 0;  // keys of other types (oct, other curves, use "enc")
};

enum class jwks_errc { io = 1, bad_json, bad_key };

// A JWKS document's text. Errors: bad_json (not a {"keys":[...]} object), bad_key (a supported key
// with missing or malformed members, a private key member "d", an "alg" that does not fit the key, an
// RSA key under 2048 bits, two keys with one kid).
result<std::shared_ptr<const key_set>> parse_jwks(std::string_view json);
result<std::shared_ptr<const key_set>> load_jwks_file(const std::string& path);

}  // namespace weir::auth
