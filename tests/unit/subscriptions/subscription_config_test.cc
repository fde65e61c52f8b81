#include "subscriptions/subscription_config.h"

#include <gtest/gtest.h>

namespace weir::subscriptions {
namespace {

const config_limits dev{true, 30'000};

subscription_config must_parse(std::string_view body, config_limits limits = dev) {
  auto r = parse_subscription_config(body, limits);
  EXPECT_TRUE(r.has_value()) << body << " -> " << (r ? "" : r.err().reason);
  return r ? *r : subscription_config{};
}

config_errc error_of(std::string_view body, config_limits limits = dev) {
  auto r = parse_subscription_config(body, limits);
  EXPECT_FALSE(r.has_value()) << body;
  return r ? config_errc{} : r.err().as<config_errc>();
}

TEST(subscription_config, parses_a_webhook_subscription) {
  auto c = must_parse(R"({"type":"webhook","pattern":"events/*","streams":["events/b","/events/a"],
      "webhook":{"url":"http://127.0.0.1:9000/hook"},"lease_ttl_ms":1000,"description":"d"})");
  EXPECT_EQ(c.type, delivery_type::webhook);
  EXPECT_EQ(c.pattern, "events/*");
  EXPECT_EQ(c.streams, (std::vector<std::string>{"events/a", "events/b"}));
  EXPECT_EQ(c.webhook_url, "http://127.0.0.1:9000/hook");
  EXPECT_FALSE(c.wake_stream);
  EXPECT_EQ(c.lease_ttl_ms, 1000);
  EXPECT_EQ(c.description, "d");
}

TEST(subscription_config, parses_a_pull_wake_subscription_with_defaults) {
  auto c = must_parse(R"({"type":"pull-wake","streams":["a"],"wake_stream":"/wake/pool"})",
                      config_limits{false, 12'345});
  EXPECT_EQ(c.type, delivery_type::pull_wake);
  EXPECT_EQ(c.wake_stream, "wake/pool");
  EXPECT_EQ(c.lease_ttl_ms, 12'345);
  EXPECT_FALSE(c.pattern);
  EXPECT_FALSE(c.description);
}

// PROTOCOL.md 6.2: the hash is over the normalised configuration.
TEST(subscription_config, equivalent_bodies_hash_alike) {
  auto a =
      must_parse(R"({"type":"webhook","streams":["x","y","x"],"webhook":{"url":"https://w.example/h"}})");
  auto b = must_parse(
      R"({"description":null,"lease_ttl_ms":30000,"webhook":{"url":"https://w.example/h"},"streams":["/y","x"],"type":"webhook","extra":1})");
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(a.hash().size(), 64u);
}

TEST(subscription_config, each_hashed_field_changes_the_hash) {
  const std::string base = must_parse(R"({"type":"webhook","pattern":"e/*","streams":["s"],
      "webhook":{"url":"https://w.example/h"},"lease_ttl_ms":2000,"description":"d"})")
                               .hash();
  const char* variants[] = {
      R"({"type":"webhook","pattern":"f/*","streams":["s"],"webhook":{"url":"https://w.example/h"},"lease_ttl_ms":2000,"description":"d"})",
      R"({"type":"webhook","pattern":"e/*","streams":["t"],"webhook":{"url":"https://w.example/h"},"lease_ttl_ms":2000,"description":"d"})",
      R"({"type":"webhook","pattern":"e/*","streams":["s"],"webhook":{"url":"https://w.example/i"},"lease_ttl_ms":2000,"description":"d"})",
      R"({"type":"webhook","pattern":"e/*","streams":["s"],"webhook":{"url":"https://w.example/h"},"lease_ttl_ms":3000,"description":"d"})",
      R"({"type":"webhook","pattern":"e/*","streams":["s"],"webhook":{"url":"https://w.example/h"},"lease_ttl_ms":2000,"description":"e"})",
      R"({"type":"webhook","pattern":"e/*","streams":["s"],"webhook":{"url":"https://w.example/h"},"lease_ttl_ms":2000})",
      R"({"type":"pull-wake","pattern":"e/*","streams":["s"],"wake_stream":"w","lease_ttl_ms":2000,"description":"d"})",
  };
  for (const char* v : variants) EXPECT_NE(must_parse(v).hash(), base) << v;
}

TEST(subscription_config, rejects_invalid_bodies) {
  EXPECT_EQ(error_of("{"), config_errc::invalid_json);
  EXPECT_EQ(error_of("[]"), config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"pattern":"e/*","webhook":{"url":"https://w.example/h"}})"),
            config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"push","pattern":"e/*"})"), config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"webhook","webhook":{"url":"https://w.example/h"}})"),
            config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"webhook","streams":[],"webhook":{"url":"https://w.example/h"}})"),
            config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"webhook","pattern":"e/*"})"), config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"webhook","pattern":"e/*","webhook":{}})"), config_errc::invalid_request);
  EXPECT_EQ(
      error_of(
          R"({"type":"webhook","pattern":"e/*","webhook":{"url":"https://w.example/h"},"wake_stream":"w"})"),
      config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"pull-wake","pattern":"e/*"})"), config_errc::invalid_request);
  EXPECT_EQ(
      error_of(
          R"({"type":"pull-wake","pattern":"e/*","wake_stream":"w","webhook":{"url":"https://w.example/h"}})"),
      config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"pull-wake","pattern":"e/*","wake_stream":"__ds/x"})"),
            config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"pull-wake","pattern":"__ds/*","wake_stream":"w"})"),
            config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"pull-wake","pattern":"e//x","wake_stream":"w"})"),
            config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"pull-wake","streams":["a/../b"],"wake_stream":"w"})"),
            config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"pull-wake","streams":[1],"wake_stream":"w"})"),
            config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"pull-wake","streams":["a","w"],"wake_stream":"/w"})"),
            config_errc::invalid_request);
  EXPECT_EQ(error_of(R"({"type":"pull-wake","streams":["a"],"wake_stream":"w","description":5})"),
            config_errc::invalid_request);
}

// PROTOCOL.md 6.2: lease from 1 second to 10 minutes.
TEST(subscription_config, lease_bounds) {
  const char* tpl = R"({"type":"pull-wake","streams":["a"],"wake_stream":"w","lease_ttl_ms":%s})";
  auto with = [&](const char* v) {
    char buf[256];
    std::snprintf(buf, sizeof buf, tpl, v);
    return std::string(buf);
  };
  EXPECT_EQ(must_parse(with("1000")).lease_ttl_ms, 1000);
  EXPECT_EQ(must_parse(with("600000")).lease_ttl_ms, 600000);
  EXPECT_EQ(must_parse(with("5000.0")).lease_ttl_ms, 5000);
  EXPECT_EQ(error_of(with("999")), config_errc::invalid_request);
  EXPECT_EQ(error_of(with("600001")), config_errc::invalid_request);
  EXPECT_EQ(error_of(with("1500.5")), config_errc::invalid_request);
  EXPECT_EQ(error_of(with("\"2000\"")), config_errc::invalid_request);
  EXPECT_EQ(error_of(with("-5")), config_errc::invalid_request);
}

TEST(subscription_config, webhook_url_rejection_has_its_own_code) {
  EXPECT_EQ(error_of(R"({"type":"webhook","pattern":"e/*","webhook":{"url":"http://10.0.0.1/hook"}})"),
            config_errc::webhook_url_rejected);
  EXPECT_EQ(error_of(R"({"type":"webhook","pattern":"e/*","webhook":{"url":"http://127.0.0.1/hook"}})",
                     config_limits{false, 30'000}),
            config_errc::webhook_url_rejected);
}

TEST(subscription_config, subscription_ids) {
  EXPECT_TRUE(valid_subscription_id("sub-1700000000000"));
  EXPECT_TRUE(valid_subscription_id("a.b_c~d:e"));
  EXPECT_FALSE(valid_subscription_id(""));
  EXPECT_FALSE(valid_subscription_id("a/b"));
  EXPECT_FALSE(valid_subscription_id("a b"));
  EXPECT_FALSE(valid_subscription_id(std::string(201, 'a')));
}

}  // namespace
}  // namespace weir::subscriptions
