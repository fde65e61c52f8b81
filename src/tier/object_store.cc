#include "tier/object_store.h"

#include <fmt/format.h>

namespace weir::tier {

const char* to_string(store_errc e) {
  switch (e) {
    case store_errc::not_found:
      return "not_found";
    case store_errc::precondition_failed:
      return "precondition_failed";
    case store_errc::conflict:
      return "conflict";
    case store_errc::throttled:
      return "throttled";
    case store_errc::server_error:
      return "server_error";
    case store_errc::timeout:
      return "timeout";
    case store_errc::connection:
      return "connection";
    case store_errc::auth:
      return "auth";
    case store_errc::bad_range:
      return "bad_range";
    case store_errc::invalid:
      return "invalid";
    case store_errc::other:
      return "other";
  }
  return "unknown";
}

std::string store_error::describe() const {
  std::string out = to_string(kind);
  if (http_status != 0 || !code.empty()) {
    out += " (";
    if (http_status != 0) out += std::to_string(http_status);
    if (http_status != 0 && !code.empty()) out += " ";
    out += code + ")";
  }
  if (!message.empty()) out += ": " + message;
  if (attempts > 1) out += fmt::format(" after {} attempts", attempts);
  return out;
}

}  // namespace weir::tier
