// webhook_target: where a webhook may connect (PROTOCOL.md 12.8, SSRF). The URL is validated, its host
// resolved once through a `host_resolver`, and every resolved address checked; the sender then connects
// only to those checked addresses (curl is told them, it never resolves the name itself), so a name that
// answers a public address to the check and a private one to the connect (DNS rebinding) cannot win.
// `system_resolver` uses getaddrinfo with a deadline (called on the webhook sender's threads); tests use a
// fake.
// Thread-safe (no state).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "subscriptions/url_validator.h"

namespace weir::subscriptions {

class host_resolver {
 public:
  virtual ~host_resolver() = default;
  // The numeric addresses (IPv4 dotted quad or IPv6 text) of `host`, or an error.
  virtual result<std::vector<std::string>> resolve(const std::string& host) = 0;
};

// getaddrinfo on a helper thread, waited for at most `timeout_ms`: a webhook host whose DNS never answers
// must not hold a sender thread for the resolver's own (much longer) retries. A lookup that times out is
// left to finish on its helper thread and its answer is dropped.
class system_resolver final : public host_resolver {
 public:
  explicit system_resolver(std::int64_t timeout_ms = 5'000) : timeout_ms_(timeout_ms) {}
  result<std::vector<std::string>> resolve(const std::string& host) override;

 private:
  std::int64_t timeout_ms_;
};

struct webhook_target {
  parsed_webhook_url url;
  int port = 0;                        // the URL's port, or 443 / 80 from the scheme
  std::vector<std::string> addresses;  // checked; the only ones the sender may connect to
};

// Validates `url` under `policy`, resolves its host (IP literals are not resolved) and checks every
// address with validate_webhook_address. Any refused address refuses the whole target: a name that
// mixes public and private answers is not one a webhook should follow.
result<webhook_target> resolve_webhook_target(std::string_view url, const url_policy& policy,
                                              host_resolver& resolver);

}  // namespace weir::subscriptions
