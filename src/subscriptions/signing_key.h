// signing_key: the server's Ed25519 webhook signing key (PROTOCOL.md 6.5, 7.1, 12.10). Loads the private
// key from <data_dir>/webhook-signing.key (PKCS#8 PEM, mode 0600) or creates and persists a new one, so
// the kid and JWKS stay stable across restarts. Immutable after load: safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace weir::subscriptions {

enum class signing_errc { io = 1, bad_key, crypto };

// A JWK Set of Ed25519 public keys, given as (kid, x) pairs: {"keys":[{kty,crv,kid,use,alg,x}, ...]}.
std::string jwks_json_of(const std::vector<std::pair<std::string, std::string>>& keys);

class signing_key {
 public:
  // Reads the key file under `data_dir`, creating the directory and a fresh key if missing.
  static result<std::shared_ptr<const signing_key>> load_or_create(const std::string& data_dir);
  // A fresh in-memory key (tests).
  static result<std::shared_ptr<const signing_key>> generate();

  ~signing_key();
  signing_key(const signing_key&) = delete;
  signing_key& operator=(const signing_key&) = delete;

  // "ds_" + RFC 7638 JWK thumbprint (SHA-256, base64url) of the public key: stable and derived from key
  // material, as PROTOCOL.md 6.5 recommends.
  const std::string& kid() const { return kid_; }
  // The raw 32-byte public key, base64url (JWK "x", RFC 8037 2).
  const std::string& public_x() const { return x_; }
  // {"keys":[{kty,crv,kid,use,alg,x}]}
  std::string jwks_json() const;

  // Raw 64-byte Ed25519 signature over `message`.
  std::string sign(std::string_view message) const;

  // PROTOCOL.md 7.1: "t=<unix seconds>,kid=<kid>,ed25519=<base64url signature over "<t>.<body>">".
  std::string webhook_signature(std::int64_t unix_seconds, std::string_view body) const;

  // Verifies an Ed25519 signature with a raw 32-byte public key (tests and tools).
  static bool verify(std::string_view public_key_raw, std::string_view message, std::string_view signature);

 private:
  struct pkey_deleter {
    void operator()(void* p) const;
  };
  explicit signing_key(void* pkey);

  std::unique_ptr<void, pkey_deleter> pkey_;  // EVP_PKEY*
  std::string x_;
  std::string kid_;
};

}  // namespace weir::subscriptions
