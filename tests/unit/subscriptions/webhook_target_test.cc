#include "subscriptions/webhook_target.h"

#include <gtest/gtest.h>

#include <map>

namespace weir::subscriptions {
namespace {

// Answers by host name; counts the questions.
class table_resolver final : public host_resolver {
 public:
  explicit table_resolver(std::map<std::string, std::vector<std::string>> table) : table_(std::move(table)) {}
  result<std::vector<std::string>> resolve(const std::string& host) override {
    ++calls;
    auto it = table_.find(host);
    if (it == table_.end()) return make_error(url_errc::rejected, "no such host");
    return it->second;
  }
  int calls = 0;

 private:
  std::map<std::string, std::vector<std::string>> table_;
};

table_resolver resolver({
    {"loop.example", {"127.0.0.1"}},
    {"metadata.example", {"169.254.169.254"}},
    {"private.example", {"10.20.30.40"}},
    {"loop6.example", {"::1"}},
    {"public.example", {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"}},
    {"mixed.example", {"93.184.216.34", "192.168.1.1"}},
    {"localhost", {"::1", "127.0.0.1"}},
    {"hooks.corp", {"10.0.0.7"}},
    {"evil.corp", {"169.254.169.254"}},
    {"long6.example", {"2606:4700:0000:0000:0000:0000:0000:1111"}},
});

std::string refusal(std::string_view url, const url_policy& p = {}) {
  auto t = resolve_webhook_target(url, p, resolver);
  return t ? std::string("accepted") : t.err().reason;
}

// PROTOCOL.md 12.8: the check is on what the name resolves to, not on the name.
TEST(webhook_target, refuses_names_that_resolve_to_local_addresses) {
  EXPECT_NE(refusal("https://loop.example/h").find("loopback"), std::string::npos);
  EXPECT_NE(refusal("https://metadata.example/h").find("169.254.169.254"), std::string::npos);
  EXPECT_NE(refusal("https://private.example/h").find("private"), std::string::npos);
  EXPECT_NE(refusal("https://loop6.example/h").find("loopback"), std::string::npos);
  EXPECT_NE(refusal("https://mixed.example/h").find("192.168.1.1"), std::string::npos);
  EXPECT_NE(refusal("https://nowhere.example/h").find("no such host"), std::string::npos);
  // The development exception covers the name localhost, not other names that resolve to loopback.
  EXPECT_NE(refusal("http://loop.example/h", url_policy{true, {}}).find("https"), std::string::npos);
  EXPECT_NE(refusal("https://loop.example/h", url_policy{true, {}}).find("loopback"), std::string::npos);
}

TEST(webhook_target, accepts_public_addresses_and_pins_them) {
  auto t = resolve_webhook_target("https://public.example/h", url_policy{}, resolver);
  ASSERT_TRUE(t.has_value()) << t.err().reason;
  EXPECT_EQ(t->port, 443);
  EXPECT_EQ(t->addresses, (std::vector<std::string>{"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"}));
  // Addresses are canonical text, as curl reports the one it connected to.
  auto l = resolve_webhook_target("https://long6.example:8443/h", url_policy{}, resolver);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->port, 8443);
  EXPECT_EQ(l->addresses, (std::vector<std::string>{"2606:4700::1111"}));
}

TEST(webhook_target, ip_literals_are_checked_not_resolved) {
  int before = resolver.calls;
  auto t = resolve_webhook_target("https://93.184.216.34/h", url_policy{}, resolver);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->addresses, (std::vector<std::string>{"93.184.216.34"}));
  auto dev = resolve_webhook_target("http://127.0.0.1:9000/h", url_policy{true, {}}, resolver);
  ASSERT_TRUE(dev.has_value());
  EXPECT_EQ(dev->port, 9000);
  EXPECT_FALSE(resolve_webhook_target("http://127.0.0.1:9000/h", url_policy{}, resolver).has_value());
  EXPECT_EQ(resolver.calls, before);
}

TEST(webhook_target, development_exception_allows_localhost_on_both_families) {
  auto t = resolve_webhook_target("http://localhost:8080/h", url_policy{true, {}}, resolver);
  ASSERT_TRUE(t.has_value()) << t.err().reason;
  EXPECT_EQ(t->port, 8080);
  EXPECT_EQ(t->addresses, (std::vector<std::string>{"::1", "127.0.0.1"}));
  EXPECT_FALSE(resolve_webhook_target("http://localhost:8080/h", url_policy{}, resolver).has_value());
}

TEST(webhook_target, allow_listed_hosts_may_be_private_but_never_metadata) {
  url_policy p{false, {"hooks.corp", "evil.corp"}};
  auto t = resolve_webhook_target("https://hooks.corp/h", p, resolver);
  ASSERT_TRUE(t.has_value()) << t.err().reason;
  EXPECT_EQ(t->addresses, (std::vector<std::string>{"10.0.0.7"}));
  EXPECT_NE(refusal("https://evil.corp/h", p).find("169.254.169.254"), std::string::npos);
  EXPECT_NE(refusal("http://hooks.corp/h", p).find("https"), std::string::npos);
  EXPECT_NE(refusal("https://hooks.corp/h").find("private"), std::string::npos);  // not listed
}

// The real resolver (getaddrinfo on a helper thread, with a deadline): localhost comes from the hosts
// file, so this needs no network.
TEST(webhook_target, system_resolver_answers_localhost) {
  system_resolver r(5'000);
  auto a = r.resolve("localhost");
  ASSERT_TRUE(a.has_value()) << a.err().reason;
  ASSERT_FALSE(a->empty());
  for (const auto& ip : *a) {
    EXPECT_TRUE(ip == "127.0.0.1" || ip == "::1") << ip;
  }
}

}  // namespace
}  // namespace weir::subscriptions
