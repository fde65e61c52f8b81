// subscription_config: the body of PUT .../__ds/subscriptions/:id (PROTOCOL.md 6.2), parsed, validated and
// normalised, with the hash used for idempotent re-confirmation (201 created / 200 identical / 409
// different). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace weir::subscriptions {

// Every failure maps to one error code in the HTTP answer (see subscription_manager).
enum class config_errc { invalid_json = 1, invalid_request, webhook_url_rejected, limit_exceeded };

enum class delivery_type { webhook, pull_wake };

std::string_view to_string(delivery_type t);

struct config_limits {
  bool allow_localhost_webhooks = false;
  std::int64_t default_lease_ttl_ms = 30'000;
  std::vector<std::string> webhook_allow_hosts;  // url_policy::allow_hosts
  std::size_t max_pattern_bytes = 0;             // 0: unlimited (setting max-subscription-pattern-bytes)
};

// PROTOCOL.md 6.2: lease from 1 second to 10 minutes.
inline constexpr std::int64_t k_min_lease_ttl_ms = 1'000;
inline constexpr std::int64_t k_max_lease_ttl_ms = 600'000;

struct subscription_config {
  delivery_type type = delivery_type::webhook;
  std::optional<std::string> pattern;      // normalised (no leading '/')
  std::vector<std::string> streams;        // normalised, sorted, unique
  std::optional<std::string> webhook_url;  // webhook only, validated
  std::optional<std::string> wake_stream;  // pull-wake only, normalised
  std::int64_t lease_ttl_ms = 30'000;      // default applied
  std::optional<std::string> description;

  // A canonical JSON rendering of every hashed field (type, pattern, streams, delivery, lease,
  // description), defaults applied, so equivalent bodies render identically.
  std::string canonical_json() const;
  // Hex SHA-256 of canonical_json() (PROTOCOL.md 6.2: "hash the normalized subscription configuration").
  std::string hash() const;
};

result<subscription_config> parse_subscription_config(std::string_view body, const config_limits& limits);

// Subscription ids are client-provided (PROTOCOL.md 6.1); we accept URL-safe tokens of 1-200 characters.
bool valid_subscription_id(std::string_view id);

}  // namespace weir::subscriptions
