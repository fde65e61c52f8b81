// date_cache: the `Date:` header line (RFC 9110 6.6.1, IMF-fixdate), formatted once per second per loop
// instead of once per response.
#pragma once

#include <cstdint>
#include <ctime>
#include <string_view>

namespace weir::http {

class date_cache {
 public:
  date_cache() { update(std::time(nullptr)); }
  // Re-formats if the second changed.
  void update(std::time_t now);
  // "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
  std::string_view header_line() const { return {line_, sizeof line_}; }
  std::string_view value() const { return {line_ + 6, 29}; }

 private:
  std::time_t second_ = -1;
  char line_[37] = {};
};

// Formats `t` as IMF-fixdate into out[0..29).
void format_imf_fixdate(std::time_t t, char out[29]);

}  // namespace weir::http
