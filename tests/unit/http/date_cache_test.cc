#include "http/date_cache.h"

#include <gtest/gtest.h>

#include <string>

#include "http/status_text.h"

namespace weir::http {
namespace {

TEST(date_cache, formats_imf_fixdate) {
  char out[29];
  format_imf_fixdate(784111777, out);  // RFC 9110 5.6.7 example
  EXPECT_EQ(std::string(out, 29), "Sun, 06 Nov 1994 08:49:37 GMT");
  format_imf_fixdate(951782400, out);  // leap day
  EXPECT_EQ(std::string(out, 29), "Tue, 29 Feb 2000 00:00:00 GMT");
}

TEST(date_cache, header_line_changes_only_with_the_second) {
  date_cache d;
  d.update(784111777);
  EXPECT_EQ(d.header_line(), "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
  EXPECT_EQ(d.value(), "Sun, 06 Nov 1994 08:49:37 GMT");
  d.update(784111778);
  EXPECT_EQ(d.value(), "Sun, 06 Nov 1994 08:49:38 GMT");
}

TEST(status_text, known_and_unknown_codes) {
  EXPECT_EQ(status_text(200), "OK");
  EXPECT_EQ(status_text(413), "Content Too Large");
  EXPECT_EQ(status_text(431), "Request Header Fields Too Large");
  EXPECT_EQ(status_text(599), "Unknown");
  EXPECT_FALSE(status_has_body(204));
  EXPECT_FALSE(status_has_body(304));
  EXPECT_FALSE(status_has_body(100));
  EXPECT_TRUE(status_has_body(200));
}

}  // namespace
}  // namespace weir::http
