// Every check of auth::verify_jwt, against keys made for the test (test_keys.h).
#include "auth/jwt.h"

#include <gtest/gtest.h>

#include "auth/crypto.h"
#include "unit/auth/test_keys.h"

namespace weir::auth {
namespace {

using test_support::claims;
using test_support::test_key;

constexpr std::int64_t now = 1'700'000'000;

class jwt_test : public ::testing::Test {
 protected:
  jwt_test() {
    auto set = parse_jwks(test_support::jwks_of({ed.jwk(), ec.jwk(true), rsa.jwk()}));
    EXPECT_TRUE(set.has_value()) << (set ? "" : set.err().reason);
    keys = *set;
    policy.issuer = "https://issuer.test";
    policy.audience = "weir";
    policy.leeway_s = 30;
  }
  // The error of verifying `token` now, or 0 when it is accepted.
  int error_of(const std::string& token, std::int64_t at = now) {
    auto r = verify_jwt(token, *keys, policy, at);
    return r ? 0 : r.err().code;
  }
  static int code(token_error e) { return static_cast<int>(e); }

  test_key ed{"EdDSA", "ed-1"};
  test_key ec{"ES256", "ec-1"};
  test_key rsa{"RS256", "rsa-1"};
  std::shared_ptr<const key_set> keys;
  jwt_policy policy;
};

TEST_F(jwt_test, each_algorithm_is_accepted_with_its_key_and_names_the_scope) {
  for (const test_key* k : {&ed, &ec, &rsa}) {
    auto r = verify_jwt(k->token(claims(now + 60, R"("scope":"read,write:/v1/stream/a admin:/ openid")")),
                        *keys, policy, now);
    ASSERT_TRUE(r.has_value()) << k->alg() << ": " << r.err().reason;
    EXPECT_EQ(r->exp, now + 60);
    ASSERT_EQ(r->granted->rules.size(), 2u) << k->alg();  // "openid" is not weir's: ignored
    EXPECT_TRUE(r->granted->allows("/v1/stream/a/x", op::write));
    EXPECT_FALSE(r->granted->allows("/v1/stream/b", op::read));
    EXPECT_TRUE(r->granted->allows("/metrics", op::admin));
  }
}

TEST_F(jwt_test, a_token_without_scope_is_valid_and_grants_nothing) {
  auto r = verify_jwt(ed.token(claims(now + 60)), *keys, policy, now);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->granted->rules.empty());
}

TEST_F(jwt_test, expiry_and_not_before_with_leeway) {
  EXPECT_EQ(error_of(ed.token(claims(now - 31))), code(token_error::expired));
  EXPECT_EQ(error_of(ed.token(claims(now - 29))), 0);  // within the leeway
  EXPECT_EQ(error_of(ed.token(claims(now + 600, "\"nbf\":" + std::to_string(now + 31)))),
            code(token_error::not_yet_valid));
  EXPECT_EQ(error_of(ed.token(claims(now + 600, "\"nbf\":" + std::to_string(now + 29)))), 0);
  EXPECT_EQ(error_of(ed.token(claims(now + 600, "\"nbf\":1.7e9"))), 0);  // NumericDate may be a fraction
  // exp is required, and must be a number.
  EXPECT_EQ(error_of(ed.token(R"({"iss":"https://issuer.test","aud":"weir"})")),
            code(token_error::malformed));
  EXPECT_EQ(error_of(ed.token(R"({"iss":"https://issuer.test","aud":"weir","exp":"soon"})")),
            code(token_error::malformed));
}

TEST_F(jwt_test, issuer_and_audience) {
  EXPECT_EQ(error_of(ed.token(claims(now + 60, "", "https://other.test"))), code(token_error::wrong_issuer));
  EXPECT_EQ(error_of(ed.token(R"({"aud":"weir","exp":)" + std::to_string(now + 60) + "}")),
            code(token_error::wrong_issuer));
  EXPECT_EQ(error_of(ed.token(claims(now + 60, "", "https://issuer.test", "\"other\""))),
            code(token_error::wrong_audience));
  EXPECT_EQ(error_of(ed.token(claims(now + 60, "", "https://issuer.test", R"(["a","weir"])"))), 0);
  EXPECT_EQ(error_of(ed.token(claims(now + 60, "", "https://issuer.test", R"(["a","b"])"))),
            code(token_error::wrong_audience));
  EXPECT_EQ(error_of(ed.token(R"({"iss":"https://issuer.test","exp":)" + std::to_string(now + 60) + "}")),
            code(token_error::wrong_audience));
}

TEST_F(jwt_test, a_token_signed_by_another_key_with_a_known_kid_is_refused) {
  test_key impostor("EdDSA", "ed-1");
  EXPECT_EQ(error_of(impostor.token(claims(now + 60))), code(token_error::bad_signature));
  test_key ec_impostor("ES256", "ec-1");
  EXPECT_EQ(error_of(ec_impostor.token(claims(now + 60))), code(token_error::bad_signature));
  test_key rsa_impostor("RS256", "rsa-1");
  EXPECT_EQ(error_of(rsa_impostor.token(claims(now + 60))), code(token_error::bad_signature));
}

TEST_F(jwt_test, unknown_kid_and_a_missing_kid_among_several_keys) {
  test_key other("EdDSA", "nobody");
  EXPECT_EQ(error_of(other.token(claims(now + 60))), code(token_error::unknown_key));
  EXPECT_EQ(error_of(ed.token(claims(now + 60), R"({"alg":"EdDSA"})")), code(token_error::unknown_key));
  // With exactly one key in the set a kid is not needed.
  auto single = parse_jwks(test_support::jwks_of({ed.jwk()}));
  ASSERT_TRUE(single.has_value());
  EXPECT_TRUE(
      verify_jwt(ed.token(claims(now + 60), R"({"alg":"EdDSA"})"), **single, policy, now).has_value());
}

TEST_F(jwt_test, alg_none_is_refused) {
  std::string body = base64url_encode(claims(now + 60));
  for (std::string header :
       {R"({"alg":"none","kid":"ed-1"})", R"({"alg":"none"})", R"({"alg":"NONE","kid":"ed-1"})"}) {
    std::string unsigned_token = base64url_encode(header) + "." + body + ".";
    EXPECT_EQ(error_of(unsigned_token), code(token_error::malformed)) << header;  // no signature at all
    EXPECT_EQ(error_of(base64url_encode(header) + "." + body + ".AAAA"), code(token_error::unsupported_alg))
        << header;
  }
}

TEST_F(jwt_test, hs256_keyed_with_the_public_key_is_refused) {
  for (const test_key* k : {&ed, &ec, &rsa}) {
    EXPECT_EQ(error_of(test_support::hs256_token(k->kid(), claims(now + 60), k->public_bytes())),
              code(token_error::unsupported_alg))
        << k->alg();
  }
}

TEST_F(jwt_test, an_alg_that_does_not_fit_the_key_is_refused) {
  // The header names the Ed25519 key but another algorithm (and the other way round).
  EXPECT_EQ(error_of(ec.token(claims(now + 60), R"({"alg":"ES256","kid":"ed-1"})")),
            code(token_error::alg_mismatch));
  EXPECT_EQ(error_of(rsa.token(claims(now + 60), R"({"alg":"RS256","kid":"ec-1"})")),
            code(token_error::alg_mismatch));
  EXPECT_EQ(error_of(ed.token(claims(now + 60), R"({"alg":"EdDSA","kid":"rsa-1"})")),
            code(token_error::alg_mismatch));
  for (const char* alg : {"PS256", "ES384", "RS512", "HS512", "Ed25519"}) {
    EXPECT_EQ(error_of(ed.token(claims(now + 60), std::string(R"({"alg":")") + alg + R"(","kid":"ed-1"})")),
              code(token_error::unsupported_alg))
        << alg;
  }
  EXPECT_EQ(error_of(ed.token(claims(now + 60), R"({"alg":"EdDSA","kid":"ed-1","crit":["exp"]})")),
            code(token_error::unsupported_alg));
}

// `token` with the last `n` bytes of its signature cut off (re-encoded, so that the base64url stays valid).
std::string cut_signature(const std::string& token, std::size_t n) {
  std::size_t dot2 = token.rfind('.');
  std::string sig = *base64url_decode(token.substr(dot2 + 1));
  return token.substr(0, dot2 + 1) + base64url_encode(sig.substr(0, sig.size() - n));
}

TEST_F(jwt_test, truncated_tokens_are_refused) {
  std::string t = ec.token(claims(now + 60));
  EXPECT_EQ(error_of(t.substr(0, t.rfind('.'))), code(token_error::malformed));      // no signature part
  EXPECT_EQ(error_of(t.substr(0, t.rfind('.') + 1)), code(token_error::malformed));  // empty signature
  EXPECT_EQ(error_of(cut_signature(t, 3)), code(token_error::bad_signature));        // 61 of 64 bytes
  EXPECT_NE(error_of(t.substr(0, t.size() - 1)), 0);  // a character less: bad base64url or signature
  EXPECT_EQ(error_of(t.substr(0, t.find('.'))), code(token_error::malformed));
  EXPECT_EQ(error_of(""), code(token_error::malformed));
  EXPECT_EQ(error_of(".."), code(token_error::malformed));
  std::string r = rsa.token(claims(now + 60));
  EXPECT_EQ(error_of(cut_signature(r, 1)), code(token_error::bad_signature));
  std::string e = ed.token(claims(now + 60));
  EXPECT_EQ(error_of(cut_signature(e, 1)), code(token_error::bad_signature));
  // A DER signature (what OpenSSL produces, not JOSE's R || S) is not accepted either.
  std::string input = t.substr(0, t.rfind('.'));
  EXPECT_EQ(error_of(input + "." + base64url_encode(ec.sign_der(input))), code(token_error::bad_signature));
}

TEST_F(jwt_test, oversized_tokens_are_refused_before_decoding) {
  std::string big = ed.token(claims(now + 60, "\"pad\":\"" + std::string(max_token_bytes, 'x') + "\""));
  EXPECT_EQ(error_of(big), code(token_error::too_long));
  EXPECT_EQ(error_of(std::string(max_token_bytes + 1, 'a')), code(token_error::too_long));
}

TEST_F(jwt_test, bad_base64url_is_refused) {
  std::string t = ed.token(claims(now + 60));
  std::size_t dot1 = t.find('.');
  EXPECT_EQ(error_of(t.substr(0, dot1) + "=" + t.substr(dot1)), code(token_error::malformed));  // padding
  std::string plus = t;
  plus[1] = '+';  // the standard alphabet, not the URL-safe one
  EXPECT_EQ(error_of(plus), code(token_error::malformed));
  std::string space = t;
  space.insert(dot1 + 2, " ");
  EXPECT_EQ(error_of(space), code(token_error::malformed));
}

TEST_F(jwt_test, bad_json_is_refused_even_when_signed) {
  EXPECT_EQ(error_of(ed.token("{\"iss\":")), code(token_error::malformed));
  EXPECT_EQ(error_of(ed.token("[1,2]")), code(token_error::malformed));
  EXPECT_EQ(error_of(ed.token(claims(now + 60), "{\"alg\":\"EdDSA\",")), code(token_error::malformed));
  EXPECT_EQ(error_of(ed.token(claims(now + 60), "\"EdDSA\"")), code(token_error::malformed));
  // A member named twice: two parsers could read two different tokens.
  EXPECT_EQ(error_of(ed.token(claims(now + 60), R"({"alg":"EdDSA","kid":"ed-1","alg":"none"})")),
            code(token_error::malformed));
  EXPECT_EQ(error_of(ed.token(claims(now + 60, "\"exp\":1"))), code(token_error::malformed));
  EXPECT_EQ(error_of(ed.token(claims(now + 60, "\"scope\":[\"read:/\"]"))), code(token_error::malformed));
}

TEST_F(jwt_test, a_changed_payload_breaks_the_signature) {
  std::string t = rsa.token(claims(now + 60, R"("scope":"read:/v1/stream/a")"));
  std::size_t dot1 = t.find('.'), dot2 = t.rfind('.');
  std::string forged =
      t.substr(0, dot1 + 1) + base64url_encode(claims(now + 60, R"("scope":"admin:/")")) + t.substr(dot2);
  EXPECT_EQ(error_of(forged), code(token_error::bad_signature));
}

}  // namespace
}  // namespace weir::auth
