// token_signer: callback and claim tokens (PROTOCOL.md 7.1, 7.2, 12.9). A token is
// base64url(claims) "." base64url(HMAC-SHA256(secret, claims)); the claims name the subscription (and its
// incarnation, so a re-created subscription with the same id rejects old tokens), the generation and
// wake it was issued for, its kind, and an expiry. Stateless and immutable after construction: safe to
// share. Fencing (does the generation still match?) is the caller's job; this only proves origin.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace weir::subscriptions {

enum class token_errc { invalid = 1, expired };

enum class token_kind : char { callback = 'c', claim = 'w' };

struct token_claims {
  token_kind kind = token_kind::callback;
  std::string subscription;  // the service's key for the subscription
  std::uint64_t incarnation = 0;
  std::uint64_t generation = 0;
  std::string wake_id;
  std::int64_t expires_at_ms = 0;  // wall clock
};

class token_signer {
 public:
  // `secret` must be at least 32 bytes; random_secret() makes one.
  explicit token_signer(std::string secret);
  static std::string random_secret();

  std::string issue(const token_claims& c) const;
  // Checks the MAC (constant time), the shape and the expiry against `now_wall_ms`.
  result<token_claims> verify(std::string_view token, std::int64_t now_wall_ms) const;

 private:
  std::string secret_;
};

}  // namespace weir::subscriptions
