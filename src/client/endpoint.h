// endpoint: an http:// base URL split for the HTTP client (http_connection). Shared by `weir bench`
// (its --target URLs) and `weir stream` (its --server URL).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace weir::client {

// Streams live at `prefix` + "/" + name; a URL without a path gets "/v1/stream", where the Node
// reference server and weir serve streams.
struct endpoint {
  std::string url;   // as given
  std::string host;  // IPv4 dotted quad ("localhost" becomes 127.0.0.1)
  std::uint16_t port = 80;
  std::string prefix;  // no trailing '/'
};

// "http://HOST[:PORT][/PATH]": HOST an IPv4 address or localhost; no query or fragment.
result<endpoint> parse_endpoint(std::string_view url);

}  // namespace weir::client
