// Request bodies of the delivery endpoints (PROTOCOL.md 6.4, 7.1, 7.2): explicit membership, callback /
// ack, claim and release. Parsed with simdjson; failures are config_errc::invalid_json / invalid_request.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace weir::subscriptions {

struct stream_ack {
  std::string stream;  // normalised stream-root-relative path
  std::string offset;  // last processed offset, inclusive
};

// POST .../callback and POST .../ack: {wake_id, generation, acks?, done?}
struct ack_request {
  std::string wake_id;
  std::uint64_t generation = 0;
  std::vector<stream_ack> acks;
  bool done = false;
};

// POST .../release: {wake_id, generation}
struct release_request {
  std::string wake_id;
  std::uint64_t generation = 0;
};

result<ack_request> parse_ack_request(std::string_view body);
result<release_request> parse_release_request(std::string_view body);
// POST .../claim: {worker}; the worker name (1-200 bytes).
result<std::string> parse_claim_request(std::string_view body);
// POST .../streams: {streams: [...]}; normalised paths.
result<std::vector<std::string>> parse_membership_request(std::string_view body);

}  // namespace weir::subscriptions
