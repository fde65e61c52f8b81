// JSON bodies the subscription layer sends: the subscription resource (PROTOCOL.md 6.3), webhook
// notifications (7.1), claim answers and wake events (7.2), and error bodies. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "subscriptions/subscription_state.h"

namespace weir::subscriptions {

struct signing_info {
  std::string kid;
  std::string jwks_url;
};

// RFC 3339 UTC with milliseconds, e.g. "2026-05-09T00:00:00.000Z".
std::string format_timestamp(std::int64_t wall_ms);

// GET/PUT answer: id, subscription_id, type, pattern, streams[{path, link_type, acked_offset}], webhook
// {url, signing{alg, kid, jwks_url}} | null, wake_stream, lease_ttl_ms, created_at, status, description.
// Never a shared secret (the signing key is asymmetric).
std::string render_subscription(const subscription_state& s, const signing_info& signing);

// The webhook POST body.
std::string render_notification(const subscription_state& s, const wake_state& w,
                                std::string_view callback_url, std::string_view callback_token);

// The claim answer.
std::string render_claim(const wake_state& w, std::string_view token, std::int64_t lease_ttl_ms);

// The event appended to a pull-wake subscription's wake stream.
std::string render_wake_event(const subscription_state& s, const wake_state& w, std::int64_t ts_wall_ms);

// {"error":{"code":..., "message":...}}
std::string render_error(std::string_view code, std::string_view message);

}  // namespace weir::subscriptions
