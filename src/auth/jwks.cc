#include "auth/jwks.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <simdjson.h>

#include <fstream>
#include <sstream>

#include "auth/crypto.h"

namespace weir::auth {

public_key::~public_key() {
  EVP_PKEY_free(pkey);
}

std::string_view alg_of(key_type t) {
  switch (t) {
    case key_type::ed25519:
      return "EdDSA";
    case key_type::p256:
      return "ES256";
    case key_type::rsa:
      return "RS256";
  }
  return "?";
}

namespace {

error bad_key(std::string_view kid, const std::string& why) {
  return make_error(jwks_errc::bad_key, "key '" + std::string(kid) + "': " + why);
}

// A member that must be a base64url string of bytes.
std::optional<std::string> b64_member(simdjson::dom::object k, std::string_view name) {
  std::string_view text;
  if (k[name].get_string().get(text) != simdjson::SUCCESS) return std::nullopt;
  return base64url_decode(text);
}

struct param_deleter {
  void operator()(OSSL_PARAM_BLD* b) const { OSSL_PARAM_BLD_free(b); }
  void operator()(OSSL_PARAM* p) const { OSSL_PARAM_free(p); }
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
  void operator()(BIGNUM* n) const { BN_free(n); }
};

// EVP_PKEY_fromdata for a public key of `type_name` ("EC", "RSA") with the built parameters.
EVP_PKEY* from_params(const char* type_name, OSSL_PARAM_BLD* bld) {
  std::unique_ptr<OSSL_PARAM, param_deleter> params(OSSL_PARAM_BLD_to_param(bld));
  std::unique_ptr<EVP_PKEY_CTX, param_deleter> ctx(EVP_PKEY_CTX_new_from_name(nullptr, type_name, nullptr));
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1) return nullptr;
  EVP_PKEY* key = nullptr;
  if (EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) return nullptr;
  // fromdata does not check that an EC point lies on the curve: do it here, once per load.
  std::unique_ptr<EVP_PKEY_CTX, param_deleter> check(EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr));
  if (!check || EVP_PKEY_public_check(check.get()) != 1) {
    EVP_PKEY_free(key);
    return nullptr;
  }
  return key;
}

result<EVP_PKEY*> ec_key(simdjson::dom::object k, std::string_view kid) {
  auto x = b64_member(k, "x"), y = b64_member(k, "y");
  if (!x || !y || x->size() != 32 || y->size() != 32) return bad_key(kid, "P-256 needs 32-byte x and y");
  std::string point = "\x04" + *x + *y;  // SEC 1 2.3.3, uncompressed
  std::unique_ptr<OSSL_PARAM_BLD, param_deleter> bld(OSSL_PARAM_BLD_new());
  if (!bld) return bad_key(kid, "out of memory");
  OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
  OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size());
  EVP_PKEY* key = from_params("EC", bld.get());
  if (!key) return bad_key(kid, "x, y is not a point of P-256");
  return key;
}

result<EVP_PKEY*> rsa_key(simdjson::dom::object k, std::string_view kid) {
  auto n = b64_member(k, "n"), e = b64_member(k, "e");
  if (!n || !e || n->empty() || e->empty()) return bad_key(kid, "RSA needs n and e");
  std::unique_ptr<BIGNUM, param_deleter> bn_n(
      BN_bin2bn(reinterpret_cast<const unsigned char*>(n->data()), static_cast<int>(n->size()), nullptr));
  std::unique_ptr<BIGNUM, param_deleter> bn_e(
      BN_bin2bn(reinterpret_cast<const unsigned char*>(e->data()), static_cast<int>(e->size()), nullptr));
  if (!bn_n || !bn_e) return bad_key(kid, "out of memory");
  if (BN_num_bits(bn_n.get()) < 2048) return bad_key(kid, "RSA keys must have at least 2048 bits");
  std::unique_ptr<OSSL_PARAM_BLD, param_deleter> bld(OSSL_PARAM_BLD_new());
  if (!bld) return bad_key(kid, "out of memory");
  OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get());
  OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get());
  EVP_PKEY* key = from_params("RSA", bld.get());
  if (!key) return bad_key(kid, "n, e is not an RSA public key");
  return key;
}

}  // namespace

result<std::shared_ptr<const key_set>> parse_jwks(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element doc;
  simdjson::dom::array keys;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS ||
      doc["keys"].get_array().get(keys) != simdjson::SUCCESS) {
    return make_error(jwks_errc::bad_json, "not a JWKS document ({\"keys\": [...]})");
  }
  auto set = std::make_shared<key_set>();
  for (simdjson::dom::element e : keys) {
    simdjson::dom::object k;
    if (e.get_object().get(k) != simdjson::SUCCESS)
      return make_error(jwks_errc::bad_json, "a key is not an object");
    std::string_view kid, kty, crv, alg, use;
    auto kid_field = k["kid"];
    if (kid_field.error() != simdjson::NO_SUCH_FIELD &&
        kid_field.get_string().get(kid) != simdjson::SUCCESS) {
      return make_error(jwks_errc::bad_key, "a key's kid is not a string");
    }
    if (k["kty"].get_string().get(kty) != simdjson::SUCCESS) return bad_key(kid, "kty missing");
    // Absent or not a string: left empty (no curve matches, "use" is then unrestricted).
    if (k["crv"].get_string().get(crv) != simdjson::SUCCESS) crv = {};
    if (k["use"].get_string().get(use) != simdjson::SUCCESS) use = {};
    bool has_alg = k["alg"].get_string().get(alg) == simdjson::SUCCESS;
    if (k["d"].error() != simdjson::NO_SUCH_FIELD) {
      return bad_key(kid, "holds a private key member 'd': a JWKS file for weir holds public keys only");
    }
    if (!use.empty() && use != "sig") {
      ++set->skipped;
      continue;
    }
    key_type type;
    result<EVP_PKEY*> pkey = static_cast<EVP_PKEY*>(nullptr);
    if (kty == "OKP" && crv == "Ed25519") {
      type = key_type::ed25519;
      auto x = b64_member(k, "x");
      if (!x || x->size() != 32) return bad_key(kid, "Ed25519 needs a 32-byte x");
      EVP_PKEY* raw = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                                  reinterpret_cast<const unsigned char*>(x->data()), 32);
      if (!raw) return bad_key(kid, "x is not an Ed25519 public key");
      pkey = raw;
    } else if (kty == "EC" && crv == "P-256") {
      type = key_type::p256;
      pkey = ec_key(k, kid);
    } else if (kty == "RSA") {
      type = key_type::rsa;
      pkey = rsa_key(k, kid);
    } else {
      ++set->skipped;  // oct, other curves: never used
      continue;
    }
    if (!pkey) return pkey.err();
    auto key = std::make_shared<const public_key>(type, *pkey);
    if (has_alg && alg != alg_of(type)) {
      return bad_key(kid,
                     "alg " + std::string(alg) + " does not fit the key (" + std::string(alg_of(type)) + ")");
    }
    if (!set->by_kid.emplace(std::string(kid), std::move(key)).second) {
      return bad_key(kid, "two keys have this kid");
    }
  }
  return std::shared_ptr<const key_set>(std::move(set));
}

result<std::shared_ptr<const key_set>> load_jwks_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(jwks_errc::io, "cannot read JWKS file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  auto set = parse_jwks(text.str());
  if (!set) return make_error(set.err().as<jwks_errc>(), "JWKS file " + path + ": " + set.err().reason);
  return set;
}

}  // namespace weir::auth
