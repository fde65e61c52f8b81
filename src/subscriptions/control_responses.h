// Helpers shared by the subscription_manager's translation units: building control responses (the one
// place where subscription errors become HTTP statuses and codes), percent-decoding control paths, and
// reading Authorization and webhook answers. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "subscriptions/subscription_manager.h"

namespace weir::subscriptions::detail {

control_response json(int status, std::string body);
control_response fail(int status, std::string_view code, std::string_view message);
control_response no_content();
control_response method_not_allowed(std::string allow);
// 503 UNAVAILABLE with Retry-After: 1 (a cluster node that could not commit or reach the leader).
control_response unavailable(std::string_view message);
// Maps a body/config parse error (config_errc) to its 400 answer.
control_response from_config_error(const error& e);

// RFC 3986 2.1 percent-decoding; nullopt on a malformed escape.
std::optional<std::string> percent_decode(std::string_view s);
// The token of "Bearer <token>" (scheme case-insensitive, RFC 6750 2.1), or nullopt.
std::optional<std::string_view> bearer(std::string_view authorization);
// A webhook answer of {"done": true} finishes the wake synchronously (PROTOCOL.md 7.1).
bool says_done(std::string_view body);

}  // namespace weir::subscriptions::detail
