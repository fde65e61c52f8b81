#include "base/base64.h"

#include <gtest/gtest.h>

namespace weir {
namespace {

TEST(base64, round_trips_every_length_and_byte) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    bytes.push_back(static_cast<char>(i * 7 % 256));
    auto back = base64_decode(base64_encode(bytes));
    ASSERT_TRUE(back.has_value()) << back.err().reason;
    ASSERT_EQ(*back, bytes);
  }
}

TEST(base64, rfc4648_vectors) {
  // RFC 4648 section 10.
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(*base64_decode("Zm9vYg=="), "foob");
  EXPECT_EQ(*base64_decode(""), "");
}

TEST(base64, line_breaks_between_data_lines_are_dropped) {
  // PROTOCOL.md 5.8: the server may split the text over several data: lines.
  auto d = base64_decode("AQID\nBAUG\r\nBwgJCg==");
  ASSERT_TRUE(d.has_value()) << d.err().reason;
  EXPECT_EQ(*d, std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a"));
}

TEST(base64, rejects_what_is_not_base64) {
  EXPECT_FALSE(base64_decode("Zm9").has_value());       // not a multiple of 4
  EXPECT_FALSE(base64_decode("Zm9v!A==").has_value());  // outside the alphabet
  EXPECT_FALSE(base64_decode("Zg==Zm9v").has_value());  // padding before the end
  EXPECT_FALSE(base64_decode("Z===").has_value());      // three pads
  EXPECT_FALSE(base64_decode("Zm=v").has_value());      // data after padding
}

TEST(base64url, round_trips_and_is_strict) {
  for (std::string s : {"", "f", "fo", "foo", "foob", "\xfb\xff\xfe"}) {
    EXPECT_EQ(base64url_decode(base64url_encode(s)), s);
  }
  EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");
  EXPECT_FALSE(base64url_decode("Zm9v=").has_value());  // padding
  EXPECT_FALSE(base64url_decode("+/8").has_value());    // the standard alphabet
  EXPECT_FALSE(base64url_decode("Zm 9v").has_value());  // whitespace
  EXPECT_FALSE(base64url_decode("Zm9vY").has_value());  // 5 characters: no whole byte string
  EXPECT_FALSE(base64url_decode("Zh").has_value());     // "f" with non-zero unused bits
  EXPECT_EQ(base64url_decode("Zg"), "f");
}

TEST(base64url, round_trips_every_length) {
  std::string bytes;
  for (int n = 0; n < 70; ++n) {
    auto enc = base64url_encode(bytes);
    EXPECT_EQ(enc.find_first_of("+/="), std::string::npos);
    auto dec = base64url_decode(enc);
    ASSERT_TRUE(dec.has_value()) << n;
    EXPECT_EQ(*dec, bytes);
    bytes += static_cast<char>(n * 37 + 11);
  }
  EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");  // RFC 4648 5 alphabet
  EXPECT_FALSE(base64url_decode("ab=c"));
  EXPECT_FALSE(base64url_decode("a"));
  EXPECT_FALSE(base64url_decode("ab+c"));
  EXPECT_FALSE(base64url_decode("AB"));  // non-zero trailing bits
}

}  // namespace
}  // namespace weir
