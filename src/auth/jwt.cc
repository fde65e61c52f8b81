#include "auth/jwt.h"

#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <simdjson.h>

#include <cmath>
#include <vector>

#include "auth/crypto.h"

namespace weir::auth {

std::string_view token_error_text(token_error e) {
  switch (e) {
    case token_error::malformed:
      return "malformed token";
    case token_error::too_long:
      return "token too long";
    case token_error::unsupported_alg:
      return "unsupported token algorithm (EdDSA, ES256 or RS256)";
    case token_error::unknown_key:
      return "token signed by an unknown key";
    case token_error::alg_mismatch:
      return "token algorithm does not fit its key";
    case token_error::bad_signature:
      return "bad token signature";
    case token_error::expired:
      return "token expired";
    case token_error::not_yet_valid:
      return "token not yet valid";
    case token_error::wrong_issuer:
      return "token from another issuer";
    case token_error::wrong_audience:
      return "token for another audience";
    case token_error::unknown_api_key:
      return "unknown API key";
    case token_error::jwt_not_configured:
      return "JWTs are not accepted by this server";
  }
  return "invalid token";
}

namespace {

error fail(token_error e) {
  return make_error(e, std::string(token_error_text(e)));
}

// A JSON object with no member named twice (RFC 7515 4: a duplicate header name MUST be rejected or
// the last one used; rejecting leaves nothing for two parsers to disagree on).
bool parse_object(simdjson::dom::parser& parser, const std::string& text, simdjson::dom::object& out) {
  if (parser.parse(text).get_object().get(out) != simdjson::SUCCESS) return false;
  std::vector<std::string_view> names;
  for (auto field : out) {
    for (std::string_view n : names) {
      if (n == field.key) return false;
    }
    names.push_back(field.key);
  }
  return true;
}

// A NumericDate (RFC 7519 2): an integer or a fraction; nullopt when absent, error when not a number.
result<std::optional<std::int64_t>> numeric_date(simdjson::dom::object o, std::string_view name) {
  auto v = o[name];
  if (v.error() == simdjson::NO_SUCH_FIELD) return std::optional<std::int64_t>{};
  std::int64_t i = 0;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return std::optional<std::int64_t>(i);
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS && std::isfinite(d) && std::fabs(d) < 1e15) {
    return std::optional<std::int64_t>(static_cast<std::int64_t>(std::floor(d)));
  }
  return fail(token_error::malformed);
}

struct md_ctx_deleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  void operator()(ECDSA_SIG* s) const { ECDSA_SIG_free(s); }
};

// RFC 7518 3.4: an ES256 signature is R || S, 32 bytes each; OpenSSL wants DER.
std::optional<std::string> es256_to_der(std::string_view sig) {
  if (sig.size() != 64) return std::nullopt;
  std::unique_ptr<ECDSA_SIG, md_ctx_deleter> s(ECDSA_SIG_new());
  BIGNUM* r = BN_bin2bn(reinterpret_cast<const unsigned char*>(sig.data()), 32, nullptr);
  BIGNUM* ss = BN_bin2bn(reinterpret_cast<const unsigned char*>(sig.data() + 32), 32, nullptr);
  if (!s || !r || !ss || ECDSA_SIG_set0(s.get(), r, ss) != 1) {
    BN_free(r);
    BN_free(ss);
    return std::nullopt;
  }
  int len = i2d_ECDSA_SIG(s.get(), nullptr);
  if (len <= 0) return std::nullopt;
  std::string der(static_cast<std::size_t>(len), '\0');
  auto* p = reinterpret_cast<unsigned char*>(der.data());
  i2d_ECDSA_SIG(s.get(), &p);
  return der;
}

bool signature_ok(const public_key& key, std::string_view signed_part, std::string_view sig) {
  std::string der;
  if (key.type == key_type::p256) {
    auto d = es256_to_der(sig);
    if (!d) return false;
    der = std::move(*d);
    sig = der;
  }
  if (key.type == key_type::rsa && sig.size() != static_cast<std::size_t>(EVP_PKEY_get_size(key.pkey))) {
    return false;
  }
  std::unique_ptr<EVP_MD_CTX, md_ctx_deleter> ctx(EVP_MD_CTX_new());
  // Ed25519 is used without a separate digest (RFC 8032 PureEdDSA); the others with SHA-256. RSA's
  // default padding is PKCS #1 v1.5 (RS256, RFC 7518 3.3).
  const EVP_MD* md = key.type == key_type::ed25519 ? nullptr : EVP_sha256();
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, key.pkey) != 1) return false;
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                          reinterpret_cast<const unsigned char*>(signed_part.data()),
                          signed_part.size()) == 1;
}

}  // namespace

result<jwt_claims> verify_jwt(std::string_view token, const key_set& keys, const jwt_policy& policy,
                              std::int64_t now_s) {
  if (token.size() > max_token_bytes) return fail(token_error::too_long);
  const std::size_t dot1 = token.find('.');
  const std::size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos || dot1 == 0 ||
      dot2 == dot1 + 1 || dot2 + 1 == token.size()) {
    return fail(token_error::malformed);
  }
  auto header_text = base64url_decode(token.substr(0, dot1));
  auto payload_text = base64url_decode(token.substr(dot1 + 1, dot2 - dot1 - 1));
  auto sig = base64url_decode(token.substr(dot2 + 1));
  if (!header_text || !payload_text || !sig) return fail(token_error::malformed);

  simdjson::dom::parser parser;
  simdjson::dom::object header;
  if (!parse_object(parser, *header_text, header)) return fail(token_error::malformed);
  std::string_view alg, kid;
  if (header["alg"].get_string().get(alg) != simdjson::SUCCESS) return fail(token_error::malformed);
  auto kid_field = header["kid"];
  const bool has_kid = kid_field.error() != simdjson::NO_SUCH_FIELD;
  if (has_kid && kid_field.get_string().get(kid) != simdjson::SUCCESS) return fail(token_error::malformed);
  // RFC 7515 4.1.11: extensions we do not understand make the token invalid.
  if (header["crit"].error() != simdjson::NO_SUCH_FIELD) return fail(token_error::unsupported_alg);
  if (alg != "EdDSA" && alg != "ES256" && alg != "RS256") return fail(token_error::unsupported_alg);

  const public_key* key = nullptr;
  if (has_kid) {
    auto it = keys.by_kid.find(kid);
    if (it != keys.by_kid.end()) key = it->second.get();
  } else if (keys.by_kid.size() == 1) {
    key = keys.by_kid.begin()->second.get();
  }
  if (!key) return fail(token_error::unknown_key);
  if (alg != alg_of(key->type)) return fail(token_error::alg_mismatch);
  if (!signature_ok(*key, token.substr(0, dot2), *sig)) return fail(token_error::bad_signature);

  // Claims: only now, from a token the key holder signed.
  simdjson::dom::parser claims_parser;
  simdjson::dom::object claims;
  if (!parse_object(claims_parser, *payload_text, claims)) return fail(token_error::malformed);
  auto exp = numeric_date(claims, "exp");
  auto nbf = numeric_date(claims, "nbf");
  if (!exp || !nbf) return exp ? nbf.err() : exp.err();
  if (!*exp) return fail(token_error::malformed);  // weir requires an expiry
  std::string_view iss, scope_text;
  if (claims["iss"].get_string().get(iss) != simdjson::SUCCESS) return fail(token_error::wrong_issuer);
  bool audience_ok = false;
  std::string_view aud;
  simdjson::dom::array auds;
  if (claims["aud"].get_string().get(aud) == simdjson::SUCCESS) {
    audience_ok = aud == policy.audience;
  } else if (claims["aud"].get_array().get(auds) == simdjson::SUCCESS) {
    for (auto a : auds) {
      if (a.get_string().get(aud) == simdjson::SUCCESS && aud == policy.audience) audience_ok = true;
    }
  }
  auto scope_field = claims["scope"];
  if (scope_field.error() != simdjson::NO_SUCH_FIELD &&
      scope_field.get_string().get(scope_text) != simdjson::SUCCESS) {
    return fail(token_error::malformed);
  }
  if (now_s > **exp + policy.leeway_s) return fail(token_error::expired);
  if (*nbf && now_s + policy.leeway_s < **nbf) return fail(token_error::not_yet_valid);
  if (iss != policy.issuer) return fail(token_error::wrong_issuer);
  if (!audience_ok) return fail(token_error::wrong_audience);
  jwt_claims out;
  out.exp = **exp;
  out.granted = std::make_shared<const scope>(parse_scope_claim(scope_text));
  return out;
}

}  // namespace weir::auth
