// JWKS files: the three key types, and every reason a file or a key is refused.
#include "auth/jwks.h"

#include <gtest/gtest.h>

#include <fstream>

#include "unit/auth/test_keys.h"

namespace weir::auth {
namespace {

using test_support::jwks_of;
using test_support::test_key;

int error_of(const std::string& json) {
  auto r = parse_jwks(json);
  return r ? 0 : r.err().code;
}

TEST(jwks, the_three_key_types_load_by_kid_and_symmetric_keys_are_skipped) {
  test_key ed("EdDSA", "a"), ec("ES256", "b"), rsa("RS256", "c");
  auto set =
      parse_jwks(jwks_of({ed.jwk(true), ec.jwk(), rsa.jwk(true), R"({"kty":"oct","kid":"h","k":"c2VjcmV0"})",
                          R"({"kty":"EC","crv":"P-384","kid":"p384","x":"AA","y":"AA"})"}));
  ASSERT_TRUE(set.has_value()) << set.err().reason;
  ASSERT_EQ((*set)->by_kid.size(), 3u);
  EXPECT_EQ((*set)->skipped, 2u);
  EXPECT_EQ((*set)->by_kid.at("a")->type, key_type::ed25519);
  EXPECT_EQ((*set)->by_kid.at("b")->type, key_type::p256);
  EXPECT_EQ((*set)->by_kid.at("c")->type, key_type::rsa);
}

TEST(jwks, bad_files_and_keys_are_refused) {
  test_key ed("EdDSA", "a");
  const int bad_json = static_cast<int>(jwks_errc::bad_json), bad_key = static_cast<int>(jwks_errc::bad_key);
  EXPECT_EQ(error_of("not json"), bad_json);
  EXPECT_EQ(error_of("{}"), bad_json);
  EXPECT_EQ(error_of(R"({"keys":[1]})"), bad_json);
  EXPECT_EQ(error_of(jwks_of({ed.jwk(), ed.jwk()})), bad_key);  // one kid twice
  std::string with_alg = ed.jwk();
  with_alg.insert(1, R"("alg":"RS256",)");
  EXPECT_EQ(error_of(jwks_of({with_alg})), bad_key);
  std::string with_d = ed.jwk();
  with_d.insert(1, R"("d":"AAAA",)");
  EXPECT_EQ(error_of(jwks_of({with_d})), bad_key);  // a private key does not belong here
  EXPECT_EQ(error_of(R"({"keys":[{"kty":"OKP","crv":"Ed25519","kid":"x","x":"AAAA"}]})"), bad_key);
  // A point that is not on P-256.
  std::string zeros = base64url_encode(std::string(32, '\0'));
  EXPECT_EQ(error_of(R"({"keys":[{"kty":"EC","crv":"P-256","kid":"x","x":")" + zeros + R"(","y":")" + zeros +
                     "\"}]}"),
            bad_key);
  test_key small("RS256", "small", 1024);
  EXPECT_EQ(error_of(jwks_of({small.jwk()})), bad_key);
  EXPECT_EQ(error_of(R"({"keys":[{"crv":"Ed25519"}]})"), bad_key);  // no kty
}

TEST(jwks, a_file_that_cannot_be_read_is_an_io_error) {
  auto r = load_jwks_file("/nonexistent/jwks.json");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.err().code, static_cast<int>(jwks_errc::io));
}

}  // namespace
}  // namespace weir::auth
