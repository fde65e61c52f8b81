// CORS for browsers (Fetch standard, "CORS protocol"; PROTOCOL.md 12.7): which origin a response
// names in Access-Control-Allow-Origin, and whether it lets the page send credentials (cookies,
// withCredentials, credentials: 'include'). The one place that writes these headers is
// add_cors_headers; server::send_* call it with the grant their request earned.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/response.h"

namespace weir::protocol {

// What a request's Origin earned. Cheap to copy across cores: `origin` views the policy's storage,
// which lives as long as the node.
struct cors_grant {
  std::string_view origin;  // a listed origin, echoed with credentials; "": "*" without credentials
  bool vary = false;        // the answer depends on Origin (a list is configured): Vary: Origin
};

// The setting `cors-allowed-origins`: origins (scheme://host[:port], comma-separated) that may make
// credentialed requests. Empty: every origin gets "*" and no credentials (a credentialed request is
// then refused by the browser, Fetch 3.2.5), as before the setting existed.
class cors_policy {
 public:
  cors_policy() = default;
  explicit cors_policy(std::string_view comma_separated);  // checked by valid_cors_origins first

  // The grant for a request with this Origin header (absent: not a cross-origin browser request).
  cors_grant grant(std::optional<std::string_view> origin) const;

 private:
  std::vector<std::string> origins_;
};

// "" when `list` is empty or every comma-separated item is a valid_origin (no "*": a wildcard cannot
// carry credentials); else what is wrong.
std::string check_cors_origins(std::string_view list);

// Access-Control-Allow-Origin ("*" or the granted origin), and for a granted origin
// Access-Control-Allow-Credentials: true; Vary: Origin whenever the answer depends on Origin.
void add_cors_headers(response& r, const cors_grant& g);

}  // namespace weir::protocol
