#include "auth/crypto.h"

#include <gtest/gtest.h>

namespace weir::auth {
namespace {

TEST(crypto, sha256_of_a_known_text) {
  // FIPS 180-2 appendix B.1.
  EXPECT_EQ(to_hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest_from_hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"),
            sha256("abc"));
  EXPECT_FALSE(digest_from_hex("ba7816bf").has_value());
  EXPECT_FALSE(digest_from_hex(std::string(63, 'a') + "g").has_value());
  EXPECT_TRUE(equal_constant_time(sha256("a"), sha256("a")));
  EXPECT_FALSE(equal_constant_time(sha256("a"), sha256("b")));
}

TEST(crypto, base64url_round_trips_and_is_strict) {
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar", "\xff\xfe\x00\x01"}) {
    EXPECT_EQ(base64url_decode(base64url_encode(s)), s);
  }
  EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");
  EXPECT_FALSE(base64url_decode("Zm9v=").has_value());  // padding
  EXPECT_FALSE(base64url_decode("Zg==").has_value());
  EXPECT_FALSE(base64url_decode("+/8").has_value());    // the standard alphabet
  EXPECT_FALSE(base64url_decode("Zm 9v").has_value());  // whitespace
  EXPECT_FALSE(base64url_decode("Zm9vY").has_value());  // 5 characters: no whole byte string
  EXPECT_FALSE(base64url_decode("Zh").has_value());     // "f" with non-zero unused bits
  EXPECT_EQ(base64url_decode("Zg"), "f");
}

}  // namespace
}  // namespace weir::auth
