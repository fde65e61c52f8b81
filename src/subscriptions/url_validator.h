// url_validator: webhook URL checks against SSRF (PROTOCOL.md 6.2, 12.8). Pure string analysis: host names
// are never resolved here. Rejects non-https URLs (except the development exception for http://localhost
// and http://127.0.0.x), userinfo, RFC 1918 / loopback / link-local / CGNAT / multicast / reserved IPv4,
// IPv6 local ranges, IPv4-in-IPv6 forms, non-canonical IPv4 literals (decimal, octal, hex, short forms
// such as 2130706433, 0x7f.1, 0177.0.0.1), single-label and local-only host names (.local, .internal,
// .localhost). Host names named in `url_policy::allow_hosts` skip the name checks (not the https rule).
// Thread-safe (no state).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace weir::subscriptions {

enum class url_errc { rejected = 1 };

struct url_policy {
  // PROTOCOL.md 6.2: "Development webhook URLs MAY use http://localhost or http://127.0.0.x". Off by
  // default; `weir serve --allow-loopback-webhooks` turns it on for tests and development.
  bool allow_localhost = false;
  // PROTOCOL.md 12.8 "MAY implement domain allowlisting": lower-case host names (no trailing dot) admitted
  // over https even when they are local-only names or resolve to private addresses (RFC 1918, ULA,
  // loopback, CGNAT). Link-local, unspecified, multicast, reserved and cloud-metadata addresses stay
  // refused for them too.
  std::vector<std::string> allow_hosts;
};

struct parsed_webhook_url {
  std::string scheme;               // "http" or "https"
  std::string host;                 // lower-case; IPv6 without brackets
  int port = 0;                     // 0 when absent
  bool ip_literal = false;          // host is an IPv4 or IPv6 address
  bool loopback_exception = false;  // admitted by the development exception (localhost, 127.0.0.x)
  bool allow_listed = false;        // host is in url_policy::allow_hosts
};

result<parsed_webhook_url> validate_webhook_url(std::string_view url, url_policy policy);

// What a resolved address of a URL may be, from how the URL was admitted.
enum class address_rule {
  public_only,      // the default: only public unicast addresses
  loopback_too,     // development exception: also 127.0.0.0/24 and ::1
  private_allowed,  // allow-listed host: also private ranges, never link-local / metadata / unspecified
};

// The range checks for a numeric address (IPv4 dotted quad or IPv6 text) that a webhook host resolved
// to, applied by the webhook sender before it connects, so a public name that resolves to a private
// address (DNS rebinding) is refused too.
status validate_webhook_address(std::string_view ip, address_rule rule);
// The rule for the addresses of `url` (validated under the same policy).
address_rule address_rule_for(const parsed_webhook_url& url);

}  // namespace weir::subscriptions
