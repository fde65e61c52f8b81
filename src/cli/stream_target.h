// stream_target: where a STREAM argument points: the server to connect to and the request path.
// A name goes under the --server URL's prefix (percent-encoded), a "/path" is used as given, and a whole
// "http://" URL names both the server and the path. Pure: no I/O.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "client/endpoint.h"

namespace weir::cli {

struct stream_target {
  client::endpoint server;
  std::string path;   // starts with '/', ready for a request line
  std::string token;  // bearer token for the server (--token, WEIR_TOKEN; docs/security.md); "": none
};

result<stream_target> resolve_target(std::string_view server_url, std::string_view stream);

// RFC 3986 2.1: every byte outside the unreserved set (and '/', when `keep_slash`) as %XX.
std::string percent_encode(std::string_view s, bool keep_slash);

}  // namespace weir::cli
