#include "subscriptions/token_signer.h"

#include <charconv>
#include <vector>

#include "base/assert.h"
#include "subscriptions/crypto_util.h"

namespace weir::subscriptions {
namespace {
constexpr std::string_view k_version = "dst1";

template <class T>
bool parse_number(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '\n') {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}
}  // namespace

token_signer::token_signer(std::string secret) : secret_(std::move(secret)) {
  WEIR_ASSERT(secret_.size() >= 32, "token secret too short: {} bytes", secret_.size());
}

std::string token_signer::random_secret() {
  return random_bytes(32);
}

std::string token_signer::issue(const token_claims& c) const {
  // Newline-separated claims: none of the fields can hold a newline (ids and wake ids are validated
  // tokens; the subscription key comes from a URL path, which cannot carry a raw newline).
  WEIR_ASSERT(c.subscription.find('\n') == std::string::npos && c.wake_id.find('\n') == std::string::npos,
              "newline in token claims for '{}'", c.subscription);
  std::string claims;
  claims += k_version;
  claims += '\n';
  claims += static_cast<char>(c.kind);
  claims +=
      '\n' + c.subscription + '\n' + std::to_string(c.incarnation) + '\n' + std::to_string(c.generation);
  claims += '\n' + c.wake_id + '\n' + std::to_string(c.expires_at_ms);
  return base64url_encode(claims) + "." + base64url_encode(hmac_sha256(secret_, claims));
}

result<token_claims> token_signer::verify(std::string_view token, std::int64_t now_wall_ms) const {
  auto dot = token.find('.');
  if (dot == std::string_view::npos) return make_error(token_errc::invalid, "malformed token");
  auto claims = base64url_decode(token.substr(0, dot));
  auto mac = base64url_decode(token.substr(dot + 1));
  if (!claims || !mac) return make_error(token_errc::invalid, "malformed token");
  if (!equal_constant_time(*mac, hmac_sha256(secret_, *claims))) {
    return make_error(token_errc::invalid, "bad token signature");
  }
  auto parts = split_lines(*claims);
  if (parts.size() != 7 || parts[0] != k_version || parts[1].size() != 1) {
    return make_error(token_errc::invalid, "malformed token claims");
  }
  token_claims c;
  if (parts[1][0] == static_cast<char>(token_kind::callback)) {
    c.kind = token_kind::callback;
  } else if (parts[1][0] == static_cast<char>(token_kind::claim)) {
    c.kind = token_kind::claim;
  } else {
    return make_error(token_errc::invalid, "unknown token kind");
  }
  c.subscription = std::string(parts[2]);
  c.wake_id = std::string(parts[5]);
  if (!parse_number(parts[3], c.incarnation) || !parse_number(parts[4], c.generation) ||
      !parse_number(parts[6], c.expires_at_ms)) {
    return make_error(token_errc::invalid, "malformed token claims");
  }
  if (now_wall_ms >= c.expires_at_ms) return make_error(token_errc::expired, "token expired");
  return c;
}

}  // namespace weir::subscriptions
