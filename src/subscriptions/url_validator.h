// url_validator: webhook URL checks against SSRF (PROTOCOL.md 6.2, 12.8). Pure string analysis: host names
// are never resolved here. Rejects non-https URLs (except the development exception for http://localhost
// and http://127.0.0.x), userinfo, RFC 1918 / loopback / link-local / CGNAT / multicast / reserved IPv4,
// IPv6 local ranges, IPv4-in-IPv6 forms, non-canonical IPv4 literals (decimal, octal, hex, short forms
// such as 2130706433, 0x7f.1, 0177.0.0.1), single-label and local-only host names (.local, .internal,
// .localhost). Thread-safe (no state).
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace weir::subscriptions {

enum class url_errc { rejected = 1 };

struct url_policy {
  // PROTOCOL.md 6.2: "Development webhook URLs MAY use http://localhost or http://127.0.0.x".
  bool allow_localhost = false;
};

struct parsed_webhook_url {
  std::string scheme;  // "http" or "https"
  std::string host;    // lower-case; IPv6 without brackets
  int port = 0;        // 0 when absent
};

result<parsed_webhook_url> validate_webhook_url(std::string_view url, url_policy policy);

// The same range checks for the numeric address a connection actually reached (IPv4 dotted quad or
// IPv6 text), applied by the webhook sender after name resolution so a public name that resolves to a
// private address (DNS rebinding) is refused too. Loopback is allowed only under the development
// exception (127.0.0.0/24 and ::1, since "localhost" may resolve to either).
status validate_webhook_address(std::string_view ip, url_policy policy);

}  // namespace weir::subscriptions
