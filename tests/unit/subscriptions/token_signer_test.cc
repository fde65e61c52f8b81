#include "subscriptions/token_signer.h"

#include <gtest/gtest.h>

#include "subscriptions/crypto_util.h"

namespace weir::subscriptions {
namespace {

token_claims sample() {
  return token_claims{token_kind::claim, "/v1/stream/sub-1", 7, 42, "w_abc", 1'000'000};
}

TEST(token_signer, round_trips_claims) {
  token_signer s(token_signer::random_secret());
  auto r = s.verify(s.issue(sample()), 999'999);
  ASSERT_TRUE(r.has_value()) << r.err().reason;
  EXPECT_EQ(r->kind, token_kind::claim);
  EXPECT_EQ(r->subscription, "/v1/stream/sub-1");
  EXPECT_EQ(r->incarnation, 7u);
  EXPECT_EQ(r->generation, 42u);
  EXPECT_EQ(r->wake_id, "w_abc");
  EXPECT_EQ(r->expires_at_ms, 1'000'000);
}

TEST(token_signer, rejects_expired_tokens) {
  token_signer s(token_signer::random_secret());
  auto r = s.verify(s.issue(sample()), 1'000'000);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.err().as<token_errc>(), token_errc::expired);
}

TEST(token_signer, rejects_another_servers_tokens) {
  token_signer a(token_signer::random_secret());
  token_signer b(token_signer::random_secret());
  auto r = b.verify(a.issue(sample()), 0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.err().as<token_errc>(), token_errc::invalid);
}

TEST(token_signer, rejects_tampered_claims) {
  token_signer s(token_signer::random_secret());
  std::string t = s.issue(sample());
  auto dot = t.find('.');
  // Re-encode the claims with a different generation but keep the old MAC.
  auto claims = *base64url_decode(t.substr(0, dot));
  auto pos = claims.find("\n42\n");
  ASSERT_NE(pos, std::string::npos);
  claims.replace(pos, 4, "\n43\n");
  std::string forged = base64url_encode(claims) + t.substr(dot);
  EXPECT_FALSE(s.verify(forged, 0).has_value());
  EXPECT_FALSE(s.verify("", 0).has_value());
  EXPECT_FALSE(s.verify("abc", 0).has_value());
  EXPECT_FALSE(s.verify("abc.def", 0).has_value());
  t.back() = t.back() == 'A' ? 'B' : 'A';
  EXPECT_FALSE(s.verify(t, 0).has_value());
}

TEST(token_signer, kinds_stay_distinct) {
  token_signer s(token_signer::random_secret());
  auto c = sample();
  c.kind = token_kind::callback;
  EXPECT_EQ(s.verify(s.issue(c), 0)->kind, token_kind::callback);
}

}  // namespace
}  // namespace weir::subscriptions
