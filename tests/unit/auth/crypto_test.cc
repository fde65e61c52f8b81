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

}  // namespace
}  // namespace weir::auth
