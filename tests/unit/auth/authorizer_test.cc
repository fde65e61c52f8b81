// The access decision for whole requests: which token, which operation on which path, API keys and
// JWTs (with the per-core cache and JWKS reloads), query tokens and their stripping.
#include "auth/authorizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <deque>
#include <fstream>
#include <utility>

#include "unit/auth/test_keys.h"

namespace weir::auth {
namespace {

using protocol::errc;
using test_support::claims;
using test_support::test_key;

constexpr std::int64_t now_s = 1'700'000'000;

// An http::request as the engine hands it over: views into strings this object owns.
class fake_request {
 public:
  fake_request(http::method m, std::string target,
               std::vector<std::pair<std::string, std::string>> headers = {})
      : target_(std::move(target)), headers_(headers.begin(), headers.end()) {
    head_.method = m;
    head_.target = target_;
    std::size_t q = target_.find('?');
    head_.path = std::string_view(target_).substr(0, q);
    head_.query = q == std::string::npos ? std::string_view() : std::string_view(target_).substr(q + 1);
    for (const auto& [n, v] : headers_) head_.headers[head_.header_count++] = {n, v};
    req_.head = &head_;
  }
  const http::request& get() const { return req_; }

 private:
  std::string target_;
  std::deque<std::pair<std::string, std::string>> headers_;
  http::request_head head_;
  http::request req_;
};

std::pair<std::string, std::string> bearer(const std::string& token) {
  return {"Authorization", "Bearer " + token};
}

scope_rule rule(std::string_view prefix, std::initializer_list<op> ops) {
  scope_rule r;
  EXPECT_EQ(parse_prefix(prefix, r), "");
  for (op o : ops) r.ops |= static_cast<op_set>(o);
  return r;
}

class authorizer_test : public ::testing::Test {
 protected:
  void SetUp() override {
    jwks_path_ = ::testing::TempDir() + "weir-auth-jwks-" + std::to_string(::getpid()) + ".json";
    write_jwks({k1_.jwk()});
    auth_settings s;
    s.api_keys.push_back({"reader", sha256(reader_key), {{rule("/v1/stream/a", {op::read})}}});
    s.api_keys.push_back(
        {"all",
         sha256(all_key),
         {{rule("/v1/stream/", {op::read, op::write, op::remove}), rule("/", {op::admin})}}});
    s.jwks_file = jwks_path_;
    s.jwt = {"https://issuer.test", "weir", 30};
    s.query_token_max_ttl_s = 600;
    auto a = authorizer::create(s, 2);
    ASSERT_TRUE(a.has_value()) << a.err().reason;
    auth_ = std::move(*a);
  }
  void TearDown() override { ::unlink(jwks_path_.c_str()); }

  void write_jwks(std::initializer_list<std::string> keys) {
    std::ofstream(jwks_path_) << test_support::jwks_of(keys);
  }

  decision check(const fake_request& r, std::int64_t at_s = now_s) {
    stripped_.reset();
    return auth_->check(r.get(), 0, at_s * 1000, stripped_);
  }
  errc status(http::method m, const std::string& target,
              std::vector<std::pair<std::string, std::string>> h = {}) {
    return check(fake_request(m, target, std::move(h))).error;
  }

  const std::string reader_key = "wk_reader-key-for-tests";
  const std::string all_key = "wk_all-key-for-tests";
  test_key k1_{"EdDSA", "k1"};
  std::string jwks_path_;
  std::unique_ptr<authorizer> auth_;
  std::optional<stripped_request> stripped_;
};

TEST_F(authorizer_test, a_missing_or_unknown_token_is_401) {
  decision d = check(fake_request(http::method::get, "/v1/stream/a"));
  EXPECT_EQ(d.error, errc::token_missing);
  EXPECT_EQ(d.detail, "bearer token required");
  d = check(fake_request(http::method::get, "/v1/stream/a", {{"Authorization", "Basic dXNlcjpwYXNz"}}));
  EXPECT_EQ(d.error, errc::token_missing);
  EXPECT_EQ(d.detail, "use Authorization: Bearer <token>");
  d = check(fake_request(http::method::get, "/v1/stream/a", {bearer("wk_not-a-key")}));
  EXPECT_EQ(d.error, errc::token_invalid);
  EXPECT_EQ(d.detail, "unknown API key");
  EXPECT_EQ(status(http::method::get, "/v1/stream/a", {bearer("bad token")}), errc::token_invalid);
  EXPECT_EQ(status(http::method::get, "/v1/stream/a", {bearer(std::string(5000, 'a'))}), errc::token_invalid);
  EXPECT_EQ(status(http::method::get, "/v1/stream/a", {{"Authorization", "Bearer"}}), errc::token_missing);
  // RFC 9110 11.1: the scheme is case-insensitive.
  EXPECT_EQ(status(http::method::get, "/v1/stream/a", {{"authorization", "bEaReR " + reader_key}}), errc::ok);
}

TEST_F(authorizer_test, each_operation_needs_its_own_grant) {
  auto as = [&](const std::string& key, http::method m, const std::string& target) {
    return status(m, target, {bearer(key)});
  };
  EXPECT_EQ(as(reader_key, http::method::get, "/v1/stream/a"), errc::ok);
  EXPECT_EQ(as(reader_key, http::method::get, "/v1/stream/a/b?offset=-1&live=sse"), errc::ok);
  EXPECT_EQ(as(reader_key, http::method::head, "/v1/stream/a"), errc::ok);
  EXPECT_EQ(as(reader_key, http::method::put, "/v1/stream/a"), errc::access_denied);
  EXPECT_EQ(as(reader_key, http::method::post, "/v1/stream/a"), errc::access_denied);
  EXPECT_EQ(as(reader_key, http::method::del, "/v1/stream/a"), errc::access_denied);
  EXPECT_EQ(as(reader_key, http::method::get, "/v1/stream/ab"), errc::access_denied);
  EXPECT_EQ(as(reader_key, http::method::get, "/v1/stream/%61"), errc::ok);
  EXPECT_EQ(as(reader_key, http::method::get, "/v1/stream/%61b"), errc::access_denied);
  EXPECT_EQ(as(reader_key, http::method::get, "/metrics"), errc::access_denied);
  EXPECT_EQ(as(reader_key, http::method::put, "/v1/stream/__ds/subscriptions/s1"), errc::access_denied);
  EXPECT_EQ(as(reader_key, http::method::get, "/v1/stream/a/__ds/subscriptions/s1"), errc::access_denied);
  for (http::method m :
       {http::method::get, http::method::head, http::method::put, http::method::post, http::method::del}) {
    EXPECT_EQ(as(all_key, m, "/v1/stream/x"), errc::ok);
  }
  EXPECT_EQ(as(all_key, http::method::get, "/metrics"), errc::ok);
  EXPECT_EQ(as(all_key, http::method::put, "/v1/stream/__ds/subscriptions/s1"), errc::ok);
  EXPECT_EQ(as(all_key, http::method::get, "/other/x"), errc::access_denied);
  // An unknown method needs a valid token only: the stream parser answers it (405).
  EXPECT_EQ(as(reader_key, http::method::patch, "/v1/stream/zzz"), errc::ok);
  EXPECT_EQ(status(http::method::patch, "/v1/stream/zzz"), errc::token_missing);
  decision d = check(fake_request(http::method::del, "/v1/stream/a", {bearer(reader_key)}));
  EXPECT_EQ(d.detail, "the token does not grant delete on this path");
}

TEST_F(authorizer_test, open_paths_need_no_token) {
  EXPECT_EQ(status(http::method::options, "/v1/stream/a"), errc::ok);
  EXPECT_EQ(status(http::method::options, "/v1/stream/a?offset=-1&access_token=x.y.z"), errc::ok);
  EXPECT_TRUE(stripped_.has_value());  // stripped all the same
  EXPECT_EQ(status(http::method::get, "/healthz"), errc::ok);
  EXPECT_EQ(status(http::method::get, "/v1/stream/__ds/jwks.json"), errc::ok);
  for (const char* what : {"callback", "ack", "release"}) {
    EXPECT_EQ(status(http::method::post, std::string("/v1/stream/__ds/subscriptions/s1/") + what), errc::ok)
        << what;
    // Their own callback/claim tokens are in the Authorization header: not weir's to judge.
    EXPECT_EQ(status(http::method::post, std::string("/v1/stream/__ds/subscriptions/s1/") + what,
                     {bearer("cb.tok.en")}),
              errc::ok);
  }
  EXPECT_EQ(status(http::method::post, "/v1/stream/__ds/subscriptions/s1/claim"), errc::token_missing);
  EXPECT_EQ(status(http::method::get, "/v1/stream/__ds/subscriptions/s1"), errc::token_missing);
  EXPECT_EQ(status(http::method::put, "/healthz"), errc::token_missing);
}

TEST_F(authorizer_test, a_fork_needs_read_on_its_source) {
  auth_settings s;
  s.api_keys.push_back({"a", sha256("wk_a"), {{rule("/v1/stream/a", {op::write})}}});
  s.api_keys.push_back(
      {"ab", sha256("wk_ab"), {{rule("/v1/stream/a", {op::write}), rule("/v1/stream/b", {op::read})}}});
  auto a = authorizer::create(s, 1);
  ASSERT_TRUE(a.has_value());
  std::optional<stripped_request> st;
  fake_request fork_a(http::method::put, "/v1/stream/a/f",
                      {bearer("wk_a"), {"Stream-Forked-From", "/v1/stream/b"}});
  decision d = (*a)->check(fork_a.get(), 0, now_s * 1000, st);
  EXPECT_EQ(d.error, errc::access_denied);
  EXPECT_EQ(d.detail, "the token does not grant read on the fork's source");
  fake_request fork_ab(http::method::put, "/v1/stream/a/f",
                       {bearer("wk_ab"), {"Stream-Forked-From", "/v1/stream/b"}});
  EXPECT_EQ((*a)->check(fork_ab.get(), 0, now_s * 1000, st).error, errc::ok);
  fake_request encoded(http::method::put, "/v1/stream/a/f",
                       {bearer("wk_ab"), {"Stream-Forked-From", "/v1/stream/%62c"}});
  EXPECT_EQ((*a)->check(encoded.get(), 0, now_s * 1000, st).error, errc::access_denied);
}

TEST_F(authorizer_test, a_bad_path_is_400_but_only_after_authentication) {
  EXPECT_EQ(status(http::method::get, "/v1/stream/a/%2e%2e/b"), errc::token_missing);
  EXPECT_EQ(status(http::method::get, "/v1/stream/a/%2e%2e/b", {bearer(reader_key)}), errc::bad_path);
  EXPECT_EQ(status(http::method::get, "/v1/stream/a/../b", {bearer(reader_key)}), errc::bad_path);
  EXPECT_EQ(status(http::method::get, "/v1/stream/a%zz", {bearer(reader_key)}), errc::bad_path);
}

TEST_F(authorizer_test, one_token_per_request) {
  EXPECT_EQ(status(http::method::get, "/v1/stream/a", {bearer(reader_key), bearer(all_key)}),
            errc::token_request_invalid);
  std::string jwt = k1_.token(claims(now_s + 60, R"("scope":"read:/v1/stream/a")"));
  EXPECT_EQ(status(http::method::get, "/v1/stream/a?access_token=" + jwt, {bearer(reader_key)}),
            errc::token_request_invalid);
  EXPECT_EQ(status(http::method::get, "/v1/stream/a?access_token=" + jwt + "&access_token=" + jwt),
            errc::token_request_invalid);
}

TEST_F(authorizer_test, jwts_are_verified_once_per_core_until_they_expire) {
  std::string jwt = k1_.token(claims(now_s + 60, R"("scope":"read,write:/v1/stream/a")"));
  EXPECT_EQ(status(http::method::post, "/v1/stream/a", {bearer(jwt)}), errc::ok);
  EXPECT_EQ(auth_->cache(0).size(), 1u);
  EXPECT_EQ(auth_->cache(1).size(), 0u);
  EXPECT_EQ(status(http::method::get, "/v1/stream/a", {bearer(jwt)}), errc::ok);
  EXPECT_EQ(status(http::method::del, "/v1/stream/a", {bearer(jwt)}), errc::access_denied);
  EXPECT_EQ(auth_->cache(0).size(), 1u);
  // Past exp + leeway the cached entry is not used: the token is expired.
  decision d = check(fake_request(http::method::get, "/v1/stream/a", {bearer(jwt)}), now_s + 91);
  EXPECT_EQ(d.error, errc::token_invalid);
  EXPECT_EQ(d.detail, "token expired");
  EXPECT_EQ(auth_->cache(0).size(), 0u);
  // A forged token is never cached.
  test_key impostor("EdDSA", "k1");
  EXPECT_EQ(status(http::method::get, "/v1/stream/a", {bearer(impostor.token(claims(now_s + 60)))}),
            errc::token_invalid);
  EXPECT_EQ(auth_->cache(0).size(), 0u);
}

TEST_F(authorizer_test, a_jwks_reload_replaces_the_keys_and_invalidates_cached_tokens) {
  test_key k2("ES256", "k2");
  std::string old_jwt = k1_.token(claims(now_s + 60, R"("scope":"read:/v1/stream/a")"));
  std::string new_jwt = k2.token(claims(now_s + 60, R"("scope":"read:/v1/stream/a")"));
  EXPECT_EQ(status(http::method::get, "/v1/stream/a", {bearer(old_jwt)}), errc::ok);  // now cached
  EXPECT_EQ(status(http::method::get, "/v1/stream/a", {bearer(new_jwt)}), errc::token_invalid);
  write_jwks({k2.jwk()});
  ASSERT_TRUE(auth_->reload_jwks().has_value());
  EXPECT_EQ(auth_->jwks_key_count(), 1u);
  decision d = check(fake_request(http::method::get, "/v1/stream/a", {bearer(old_jwt)}));
  EXPECT_EQ(d.error, errc::token_invalid);
  EXPECT_EQ(d.detail, "token signed by an unknown key");
  EXPECT_EQ(status(http::method::get, "/v1/stream/a", {bearer(new_jwt)}), errc::ok);
  // A broken file leaves the keys in force.
  std::ofstream(jwks_path_) << "{\"keys\": [";
  EXPECT_FALSE(auth_->reload_jwks().has_value());
  EXPECT_EQ(status(http::method::get, "/v1/stream/a", {bearer(new_jwt)}), errc::ok);
}

TEST_F(authorizer_test, query_tokens_are_short_lived_jwts_on_get_only_and_are_stripped) {
  std::string jwt = k1_.token(claims(now_s + 300, R"("scope":"read:/v1/stream/a")"));
  fake_request sse(http::method::get, "/v1/stream/a?offset=-1&access_token=" + jwt + "&live=sse");
  EXPECT_EQ(check(sse).error, errc::ok);
  ASSERT_TRUE(stripped_.has_value());
  EXPECT_EQ(stripped_->get().query(), "offset=-1&live=sse");
  EXPECT_EQ(stripped_->get().target(), "/v1/stream/a?offset=-1&live=sse");
  EXPECT_EQ(stripped_->get().path(), "/v1/stream/a");
  // Only parameter: the target loses its '?'; an encoded name is the same parameter.
  EXPECT_EQ(check(fake_request(http::method::get, "/v1/stream/a?access%5Ftoken=" + jwt)).error, errc::ok);
  ASSERT_TRUE(stripped_.has_value());
  EXPECT_EQ(stripped_->get().target(), "/v1/stream/a");
  EXPECT_EQ(check(fake_request(http::method::post, "/v1/stream/a?access_token=" + jwt)).error,
            errc::token_request_invalid);
  EXPECT_EQ(check(fake_request(http::method::head, "/v1/stream/a?access_token=" + jwt)).error,
            errc::token_request_invalid);
  // API keys never travel in URLs; JWTs only when they expire soon.
  EXPECT_EQ(status(http::method::get, "/v1/stream/a?access_token=" + reader_key), errc::token_invalid);
  std::string long_lived = k1_.token(claims(now_s + 3600, R"("scope":"read:/v1/stream/a")"));
  EXPECT_EQ(status(http::method::get, "/v1/stream/a?access_token=" + long_lived), errc::token_invalid);
  EXPECT_EQ(status(http::method::get, "/v1/stream/a", {bearer(long_lived)}), errc::ok);  // fine in a header
  // Without a token in the query nothing is copied.
  EXPECT_EQ(check(fake_request(http::method::get, "/v1/stream/a?offset=-1", {bearer(reader_key)})).error,
            errc::ok);
  EXPECT_FALSE(stripped_.has_value());
}

TEST_F(authorizer_test, query_tokens_can_be_disabled) {
  auth_settings s;
  s.jwks_file = jwks_path_;
  s.jwt = {"https://issuer.test", "weir", 30};
  s.query_token_max_ttl_s = 0;
  auto a = authorizer::create(s, 1);
  ASSERT_TRUE(a.has_value());
  std::optional<stripped_request> st;
  fake_request r(http::method::get, "/v1/stream/a?access_token=" + k1_.token(claims(now_s + 60)));
  EXPECT_EQ((*a)->check(r.get(), 0, now_s * 1000, st).error, errc::token_request_invalid);
}

TEST_F(authorizer_test, a_jwks_file_needs_an_issuer_and_an_audience) {
  auth_settings s;
  s.jwks_file = jwks_path_;
  s.jwt.issuer = "https://issuer.test";
  EXPECT_FALSE(authorizer::create(s, 1).has_value());
  s.jwt.audience = "weir";
  EXPECT_TRUE(authorizer::create(s, 1).has_value());
  s.jwks_file = "/nonexistent/jwks.json";
  EXPECT_FALSE(authorizer::create(s, 1).has_value());
}

TEST_F(authorizer_test, a_jwt_is_refused_when_only_api_keys_are_configured) {
  auth_settings s;
  s.api_keys.push_back({"a", sha256("wk_a"), {}});
  auto a = authorizer::create(s, 1);
  ASSERT_TRUE(a.has_value());
  std::optional<stripped_request> st;
  fake_request r(http::method::get, "/v1/stream/a", {bearer(k1_.token(claims(now_s + 60)))});
  decision d = (*a)->check(r.get(), 0, now_s * 1000, st);
  EXPECT_EQ(d.error, errc::token_invalid);
  EXPECT_EQ(d.detail, "JWTs are not accepted by this server");
  fake_request scopeless(http::method::get, "/v1/stream/a", {bearer("wk_a")});
  EXPECT_EQ((*a)->check(scopeless.get(), 0, now_s * 1000, st).error, errc::access_denied);
}

TEST(strip_query_token, works_without_an_authorizer) {
  std::optional<stripped_request> st;
  http::request_head head;
  head.method = http::method::get;
  head.path = "/v1/stream/a";
  head.query = "access_token=abc&offset=now";
  http::request req{&head, {}};
  EXPECT_TRUE(strip_query_token(req, st));
  EXPECT_EQ(st->get().query(), "offset=now");
  std::optional<stripped_request> none;
  head.query = "offset=now&tokens=1";
  EXPECT_FALSE(strip_query_token(req, none));
  EXPECT_FALSE(none.has_value());
}

}  // namespace
}  // namespace weir::auth
