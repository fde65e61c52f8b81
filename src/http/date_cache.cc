#include "http/date_cache.h"

#include <cstring>

namespace weir::http {

void format_imf_fixdate(std::time_t t, char out[29]) {
  static constexpr const char* days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  auto two = [](char* p, int v) {
    p[0] = static_cast<char>('0' + v / 10);
    p[1] = static_cast<char>('0' + v % 10);
  };
  std::memcpy(out, days[tm.tm_wday], 3);
  out[3] = ',';
  out[4] = ' ';
  two(out + 5, tm.tm_mday);
  out[7] = ' ';
  std::memcpy(out + 8, months[tm.tm_mon], 3);
  out[11] = ' ';
  int year = tm.tm_year + 1900;
  two(out + 12, year / 100);
  two(out + 14, year % 100);
  out[16] = ' ';
  two(out + 17, tm.tm_hour);
  out[19] = ':';
  two(out + 20, tm.tm_min);
  out[22] = ':';
  two(out + 23, tm.tm_sec);
  std::memcpy(out + 25, " GMT", 4);
}

void date_cache::update(std::time_t now) {
  if (now == second_) return;
  second_ = now;
  std::memcpy(line_, "Date: ", 6);
  format_imf_fixdate(now, line_ + 6);
  line_[35] = '\r';
  line_[36] = '\n';
}

}  // namespace weir::http
