// Reason phrases for status lines (RFC 9110 section 15). Static strings; unknown codes get "Unknown".
#pragma once

#include <string_view>

namespace weir::http {

std::string_view status_text(int status);

// 1xx, 204 and 304 responses never carry a body or a Content-Length (RFC 9110 8.6, RFC 9112 6.3).
inline bool status_has_body(int status) {
  return status >= 200 && status != 204 && status != 304;
}

}  // namespace weir::http
