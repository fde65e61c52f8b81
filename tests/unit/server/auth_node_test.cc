// Access control through a whole node on loopback (docs/security.md): 401/403/2xx by operation, the
// Bearer challenge, preflights and /healthz without a token, query tokens for GET only, no token in the
// logs, a JWKS reload, and the refusal to start without auth on a non-loopback address.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "auth/crypto.h"
#include "storage/mem_env.h"
#include "unit/auth/test_keys.h"
#include "unit/server/durable_node_fixture.h"
#include "unit/server/http_test_client.h"

namespace weir::server {
namespace {

using auth::test_support::claims;
using auth::test_support::test_key;
using test_support::http;
using test_support::reply;

const std::string reader_key = "wk_reader-key-of-the-node-test";
const std::string writer_key = "wk_writer-key-of-the-node-test";

auth::scope_rule rule(std::string_view prefix, std::initializer_list<auth::op> ops) {
  auth::scope_rule r;
  EXPECT_EQ(auth::parse_prefix(prefix, r), "");
  for (auth::op o : ops) r.ops |= static_cast<auth::op_set>(o);
  return r;
}

std::map<std::string, std::string> bearer(const std::string& token,
                                          std::map<std::string, std::string> more = {}) {
  more["Authorization"] = "Bearer " + token;
  return more;
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class auth_node_test : public test_support::durable_node_fixture {
 protected:
  void SetUp() override {
    durable_node_fixture::SetUp();
    env_ = &mem_;
    jwks_path_ = dir_ + "-jwks.json";
    write_jwks(signer_.jwk());
    cfg_.api_keys.push_back({"reader", auth::sha256(reader_key), {{rule("/v1/stream/a", {auth::op::read})}}});
    cfg_.api_keys.push_back({"writer",
                             auth::sha256(writer_key),
                             {{rule("/v1/stream/a", {auth::op::read, auth::op::write, auth::op::remove}),
                               rule("/metrics", {auth::op::admin})}}});
    cfg_.jwks_file = jwks_path_;
    cfg_.jwt_issuer = "https://issuer.test";
    cfg_.jwt_audience = "weir";
    // Every log line of the node, at every level, into `logged_`.
    previous_ = spdlog::default_logger();
    auto logger = std::make_shared<spdlog::logger>("auth-node-test",
                                                   std::make_shared<spdlog::sinks::ostream_sink_mt>(logged_));
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  void TearDown() override {
    durable_node_fixture::TearDown();
    spdlog::set_default_logger(previous_);
    ::unlink(jwks_path_.c_str());
  }
  void write_jwks(const std::string& jwk) { std::ofstream(jwks_path_) << auth::test_support::jwks_of({jwk}); }
  std::string jwt(const std::string& scope, std::int64_t ttl_s = 300) {
    return signer_.token(claims(unix_now() + ttl_s, "\"scope\":\"" + scope + "\""));
  }

  storage::mem_env mem_;
  std::string jwks_path_;
  test_key signer_{"EdDSA", "node-test"};
  std::ostringstream logged_;
  std::shared_ptr<spdlog::logger> previous_;
};

const std::map<std::string, std::string> text = {{"Content-Type", "text/plain"}};

TEST_F(auth_node_test, statuses_by_operation_and_token) {
  ASSERT_TRUE(start().has_value());
  const std::string p = "/v1/stream/a/s";
  reply missing = http(port_, "PUT", p, text);
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(missing.headers["www-authenticate"], R"(Bearer realm="weir")");
  EXPECT_EQ(missing.body, "unauthorized: bearer token required\n");
  reply invalid = http(port_, "PUT", p, bearer("wk_nobody", text));
  EXPECT_EQ(invalid.status, 401);
  EXPECT_EQ(invalid.headers["www-authenticate"], R"(Bearer realm="weir", error="invalid_token")");
  EXPECT_EQ(invalid.body, "invalid token: unknown API key\n");
  reply denied = http(port_, "PUT", p, bearer(reader_key, text));
  EXPECT_EQ(denied.status, 403);
  EXPECT_EQ(denied.body, "forbidden: the token does not grant write on this path\n");
  EXPECT_EQ(denied.headers["access-control-allow-origin"], "*");  // a browser can read the reason
  EXPECT_NE(missing.headers["access-control-expose-headers"].find("WWW-Authenticate"), std::string::npos);

  EXPECT_EQ(http(port_, "PUT", p, bearer(writer_key, text)).status, 201);
  EXPECT_EQ(http(port_, "POST", p, bearer(writer_key, text), "hello").status, 204);
  EXPECT_EQ(http(port_, "POST", p, bearer(reader_key, text), "x").status, 403);
  EXPECT_EQ(http(port_, "GET", p).status, 401);
  reply read = http(port_, "GET", p + "?offset=-1", bearer(reader_key));
  EXPECT_EQ(read.status, 200);
  EXPECT_EQ(read.body, "hello");
  EXPECT_EQ(http(port_, "HEAD", p, bearer(reader_key)).status, 200);
  reply poll = http(port_, "GET", p + "?offset=-1&live=long-poll", bearer(reader_key));
  EXPECT_EQ(poll.status, 200);
  EXPECT_EQ(poll.body, "hello");
  EXPECT_EQ(http(port_, "GET", "/v1/stream/ab", bearer(reader_key)).status, 403);
  EXPECT_EQ(http(port_, "GET", "/v1/stream/a/%2e%2e/b", bearer(reader_key)).status, 400);
  EXPECT_EQ(http(port_, "GET", "/v1/stream/a/%2e%2e/b").status, 401);
  EXPECT_EQ(http(port_, "DELETE", p, bearer(reader_key)).status, 403);
  EXPECT_EQ(http(port_, "DELETE", p, bearer(writer_key)).status, 204);
  // Admin: the subscription API and the server's own paths.
  EXPECT_EQ(http(port_, "GET", "/v1/stream/__ds/subscriptions/s1", bearer(writer_key)).status, 403);
  EXPECT_EQ(http(port_, "GET", "/metrics", bearer(reader_key)).status, 403);
  EXPECT_NE(http(port_, "GET", "/metrics", bearer(writer_key)).status, 403);
}

TEST_F(auth_node_test, preflights_and_healthz_need_no_token) {
  ASSERT_TRUE(start().has_value());
  reply pre = http(port_, "OPTIONS", "/v1/stream/a/s",
                   {{"Origin", "https://app.example"}, {"Access-Control-Request-Method", "POST"}});
  EXPECT_EQ(pre.status, 204);
  EXPECT_NE(pre.headers["access-control-allow-headers"].find("Authorization"), std::string::npos);
  EXPECT_EQ(http(port_, "GET", "/healthz").status, 200);
  EXPECT_EQ(http(port_, "GET", "/v1/stream/__ds/jwks.json").status, 200);  // webhook receivers fetch it
}

TEST_F(auth_node_test, jwts_in_the_header_and_short_lived_ones_in_the_query_for_get_only) {
  ASSERT_TRUE(start().has_value());
  const std::string p = "/v1/stream/a/q";
  const std::string rw = jwt("read,write:/v1/stream/a");
  ASSERT_EQ(http(port_, "PUT", p, bearer(rw, text)).status, 201);
  ASSERT_EQ(http(port_, "POST", p, bearer(rw, text), "abc").status, 204);
  const std::string reader = jwt("read:/v1/stream/a/q");
  reply q = http(port_, "GET", p + "?offset=-1&access_token=" + reader);
  EXPECT_EQ(q.status, 200);
  EXPECT_EQ(q.body, "abc");
  // The token is gone before the stream sees the query: the offset still applies.
  reply tail = http(port_, "GET", p + "?access_token=" + reader + "&offset=now");
  EXPECT_EQ(tail.status, 200);
  EXPECT_EQ(tail.body, "");
  reply post = http(port_, "POST", p + "?access_token=" + rw, text, "x");
  EXPECT_EQ(post.status, 400);
  EXPECT_EQ(post.headers["www-authenticate"], R"(Bearer realm="weir", error="invalid_request")");
  EXPECT_EQ(http(port_, "GET", p + "?offset=-1&access_token=" + reader_key).status, 401);
  EXPECT_EQ(http(port_, "GET", p + "?offset=-1&access_token=" + jwt("read:/v1/stream/a", 7200)).status, 401);
  EXPECT_EQ(http(port_, "GET", "/v1/stream/a/other?offset=-1&access_token=" + reader).status, 403);
}

TEST_F(auth_node_test, tokens_never_reach_the_log) {
  cfg_.log_level = "trace";
  cfg_.access_log = dir_ + "-access.log";
  ASSERT_TRUE(start().has_value());
  const std::string p = "/v1/stream/a/logged";
  const std::string token = jwt("read,write:/v1/stream/a");
  const std::string forged = test_key("EdDSA", "node-test").token(claims(unix_now() + 60));
  http(port_, "PUT", p, bearer(writer_key, text));
  http(port_, "POST", p, bearer(token, text), "x");
  http(port_, "GET", p + "?offset=-1&access_token=" + token);
  http(port_, "GET", p + "?offset=-1&access_token=" + token + "&live=long-poll");
  http(port_, "POST", p + "?access_token=" + token, text, "x");
  http(port_, "GET", p, bearer(forged));
  http(port_, "GET", p, bearer("wk_wrong-key"));
  http(port_, "GET", "/v1/stream/a/%2e%2e?access_token=" + token);
  stop();  // every core has finished with the requests
  spdlog::default_logger()->flush();
  std::ostringstream access;
  access << std::ifstream(cfg_.access_log).rdbuf();
  ::unlink(cfg_.access_log.c_str());
  EXPECT_NE(access.str().find(p), std::string::npos) << access.str();  // the access log has the requests
  const std::string log = logged_.str() + access.str();
  EXPECT_NE(log.find("access control on"), std::string::npos) << log;  // the capture works
  for (const std::string& secret : {token, forged, writer_key, std::string("wk_wrong-key")}) {
    EXPECT_EQ(log.find(secret), std::string::npos) << log;
    EXPECT_EQ(log.find(secret.substr(secret.size() / 2)), std::string::npos) << log;  // nor a part of it
  }
}

TEST_F(auth_node_test, a_jwks_reload_takes_new_keys_and_drops_old_ones) {
  ASSERT_TRUE(start().has_value());
  test_key next("ES256", "next");
  const std::string old_token = jwt("read:/v1/stream/a");
  const std::string new_token = next.token(claims(unix_now() + 300, R"("scope":"read:/v1/stream/a")"));
  EXPECT_EQ(http(port_, "GET", "/v1/stream/a/none", bearer(old_token)).status, 404);  // allowed, no stream
  EXPECT_EQ(http(port_, "GET", "/v1/stream/a/none", bearer(new_token)).status, 401);
  write_jwks(next.jwk());
  n_->reload();  // what SIGHUP does
  EXPECT_EQ(http(port_, "GET", "/v1/stream/a/none", bearer(old_token)).status, 401);
  EXPECT_EQ(http(port_, "GET", "/v1/stream/a/none", bearer(new_token)).status, 404);
  std::ofstream(jwks_path_) << "not json";
  n_->reload();
  EXPECT_NE(logged_.str().find("the previous keys stay in force"), std::string::npos);
  EXPECT_EQ(http(port_, "GET", "/v1/stream/a/none", bearer(new_token)).status, 404);
}

TEST_F(auth_node_test, without_auth_a_node_starts_only_on_loopback) {
  cfg_.api_keys.clear();
  cfg_.jwks_file.clear();
  cfg_.host = "0.0.0.0";
  status st = start();
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.err().reason.find("refusing to listen on 0.0.0.0 without access control"), std::string::npos)
      << st.err().reason;
  EXPECT_NE(st.err().reason.find("--insecure-no-auth"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/wal")) << "the node opened its log";
  // On loopback it starts without auth, and every request is served.
  cfg_.host = "127.0.0.1";
  ASSERT_TRUE(start().has_value());
  EXPECT_EQ(http(port_, "PUT", "/v1/stream/open", text).status, 201);
  // A query token is stripped even then (never kept, never logged).
  EXPECT_EQ(http(port_, "GET", "/v1/stream/open?access_token=abc&offset=-1").status, 200);
}

TEST_F(auth_node_test, a_bad_jwks_file_stops_the_start) {
  std::ofstream(jwks_path_) << "{}";
  status st = start();
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.err().reason.find("JWKS file"), std::string::npos) << st.err().reason;
  cfg_.jwt_audience.clear();
  write_jwks(signer_.jwk());
  st = start();
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.err().reason.find("jwt-audience"), std::string::npos) << st.err().reason;
}

}  // namespace
}  // namespace weir::server
