// Test support: signing keys made with OpenSSL when a test runs (never stored in the tree), their JWKS
// entries, and JWTs signed with them, including the malformed and forged ones the verifier must refuse.
#pragma once

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "auth/crypto.h"
#include "auth/jwks.h"

namespace weir::auth::test_support {

class test_key {
 public:
  // kind: "EdDSA", "ES256" or "RS256" (RSA: `rsa_bits`).
  explicit test_key(std::string alg, std::string kid, unsigned rsa_bits = 2048)
      : alg_(std::move(alg)), kid_(std::move(kid)) {
    if (alg_ == "EdDSA") {
      key_ = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
    } else if (alg_ == "ES256") {
      key_ = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    } else {
      key_ = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(rsa_bits));
    }
    if (!key_) throw std::runtime_error("keygen failed");
  }
  ~test_key() { EVP_PKEY_free(key_); }
  test_key(const test_key&) = delete;
  test_key& operator=(const test_key&) = delete;

  const std::string& alg() const { return alg_; }
  const std::string& kid() const { return kid_; }

  // The public key as a JWK object (no "alg" member unless `with_alg`).
  std::string jwk(bool with_alg = false) const {
    std::string out = "{\"kid\":\"" + kid_ + "\",\"use\":\"sig\"";
    if (with_alg) out += ",\"alg\":\"" + alg_ + "\"";
    if (alg_ == "EdDSA") {
      out += ",\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"" + base64url_encode(raw_public()) + "\"";
    } else if (alg_ == "ES256") {
      std::string pt = ec_point();
      out += ",\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" + base64url_encode(pt.substr(1, 32)) +
             "\",\"y\":\"" + base64url_encode(pt.substr(33, 32)) + "\"";
    } else {
      out += ",\"kty\":\"RSA\",\"n\":\"" + base64url_encode(bn_param(OSSL_PKEY_PARAM_RSA_N)) + "\",\"e\":\"" +
             base64url_encode(bn_param(OSSL_PKEY_PARAM_RSA_E)) + "\"";
    }
    return out + "}";
  }

  // Bytes a verifier might wrongly use as an HMAC secret: the public key's JWK members / raw bytes.
  std::string public_bytes() const { return alg_ == "EdDSA" ? raw_public() : jwk(); }

  // The JWS signature over `signing_input` in JOSE form (ES256: R || S).
  std::string sign(const std::string& signing_input) const {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    const EVP_MD* md = alg_ == "EdDSA" ? nullptr : EVP_sha256();
    EVP_DigestSignInit(ctx, nullptr, md, nullptr, key_);
    size_t len = 0;
    EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(signing_input.data()),
                   signing_input.size());
    std::string sig(len, '\0');
    EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                   reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size());
    sig.resize(len);
    EVP_MD_CTX_free(ctx);
    if (alg_ != "ES256") return sig;
    return der_to_raw(sig);
  }

  // A DER-encoded ES256 signature (what JOSE forbids) for the same input.
  std::string sign_der(const std::string& signing_input) const {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key_);
    size_t len = 0;
    EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(signing_input.data()),
                   signing_input.size());
    std::string sig(len, '\0');
    EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                   reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size());
    sig.resize(len);
    EVP_MD_CTX_free(ctx);
    return sig;
  }

  // A compact JWS: header {"alg":alg(),"kid":kid(),"typ":"JWT"} unless `header_json` is given.
  std::string token(const std::string& claims_json, const std::string& header_json = "") const {
    std::string header = header_json.empty()
                             ? "{\"alg\":\"" + alg_ + "\",\"kid\":\"" + kid_ + "\",\"typ\":\"JWT\"}"
                             : header_json;
    std::string input = base64url_encode(header) + "." + base64url_encode(claims_json);
    return input + "." + base64url_encode(sign(input));
  }

 private:
  std::string raw_public() const {
    size_t len = 32;
    std::string out(32, '\0');
    EVP_PKEY_get_raw_public_key(key_, reinterpret_cast<unsigned char*>(out.data()), &len);
    return out;
  }
  std::string ec_point() const {
    unsigned char buf[65];
    size_t len = 0;
    EVP_PKEY_get_octet_string_param(key_, OSSL_PKEY_PARAM_PUB_KEY, buf, sizeof buf, &len);
    return std::string(reinterpret_cast<char*>(buf), len);
  }
  std::string bn_param(const char* name) const {
    BIGNUM* bn = nullptr;
    EVP_PKEY_get_bn_param(key_, name, &bn);
    std::string out(static_cast<size_t>(BN_num_bytes(bn)), '\0');
    BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
    BN_free(bn);
    return out;
  }
  static std::string der_to_raw(const std::string& der) {
    const auto* p = reinterpret_cast<const unsigned char*>(der.data());
    ECDSA_SIG* s = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size()));
    std::string out(64, '\0');
    BN_bn2binpad(ECDSA_SIG_get0_r(s), reinterpret_cast<unsigned char*>(out.data()), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(s), reinterpret_cast<unsigned char*>(out.data()) + 32, 32);
    ECDSA_SIG_free(s);
    return out;
  }

  std::string alg_;
  std::string kid_;
  EVP_PKEY* key_ = nullptr;
};

// {"keys":[...]} of the given JWK objects.
inline std::string jwks_of(std::initializer_list<std::string> jwks) {
  std::string out = "{\"keys\":[";
  bool first = true;
  for (const std::string& k : jwks) {
    out += (first ? "" : ",") + k;
    first = false;
  }
  return out + "]}";
}

// An HS256 token whose HMAC key is `secret` (the alg-confusion forgery).
inline std::string hs256_token(const std::string& kid, const std::string& claims_json,
                               const std::string& secret) {
  std::string input =
      base64url_encode("{\"alg\":\"HS256\",\"kid\":\"" + kid + "\"}") + "." + base64url_encode(claims_json);
  unsigned char mac[32];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &len);
  return input + "." + base64url_encode(std::string(reinterpret_cast<char*>(mac), len));
}

// Claims with the usual issuer and audience: exp and extra members as given.
inline std::string claims(std::int64_t exp, const std::string& extra = "",
                          const std::string& iss = "https://issuer.test",
                          const std::string& aud = "\"weir\"") {
  return "{\"iss\":\"" + iss + "\",\"aud\":" + aud + ",\"exp\":" + std::to_string(exp) +
         (extra.empty() ? "" : "," + extra) + "}";
}

}  // namespace weir::auth::test_support
