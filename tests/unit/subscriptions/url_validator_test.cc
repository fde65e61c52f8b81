#include "subscriptions/url_validator.h"

#include <gtest/gtest.h>

#include <ostream>

namespace weir::subscriptions {
namespace {

struct url_case {
  const char* url;
  bool dev;  // allow_localhost
  bool ok;
};

// Readable (and stable) test names: gtest would print the struct's bytes, pointer included.
void PrintTo(const url_case& c, std::ostream* os) {
  *os << c.url << (c.dev ? " (dev)" : "") << (c.ok ? " ok" : " refused");
}

class url_table : public ::testing::TestWithParam<url_case> {};

TEST_P(url_table, validates) {
  const auto& c = GetParam();
  auto r = validate_webhook_url(c.url, url_policy{c.dev, {}});
  EXPECT_EQ(r.has_value(), c.ok) << c.url << (r ? "" : " -> " + r.err().reason);
  if (!r) {
    EXPECT_EQ(r.err().as<url_errc>(), url_errc::rejected);
  }
}

INSTANTIATE_TEST_SUITE_P(
    ssrf_rules, url_table,
    ::testing::Values(
        // Production: https to public names and addresses.
        url_case{"https://worker.example/hooks", false, true},
        url_case{"https://worker.example:8443/h?x=1", false, true},
        url_case{"HTTPS://Worker.Example./hooks", false, true},
        url_case{"https://93.184.216.34/h", false, true},
        url_case{"https://[2606:4700::1111]/h", false, true},
        // https is required outside the development exception.
        url_case{"http://worker.example/hooks", false, false},
        url_case{"http://worker.example/hooks", true, false},
        url_case{"ftp://worker.example/x", false, false}, url_case{"worker.example/hooks", false, false},
        // PROTOCOL.md 6.2 development exception: http://localhost and http://127.0.0.x only when allowed.
        url_case{"http://localhost:8080/webhook", true, true},
        url_case{"http://127.0.0.1:9999/webhook", true, true},
        url_case{"http://127.0.0.42/webhook", true, true}, url_case{"https://localhost/webhook", true, true},
        url_case{"http://localhost:8080/webhook", false, false},
        url_case{"http://127.0.0.1/webhook", false, false}, url_case{"http://127.0.1.1/webhook", true, false},
        url_case{"http://127.1.2.3/webhook", true, false},
        // RFC 1918, link-local (cloud metadata), CGNAT, unspecified, multicast, broadcast.
        url_case{"http://10.0.0.1/hook", true, false}, url_case{"https://10.0.0.1/hook", false, false},
        url_case{"https://172.16.5.4/h", false, false}, url_case{"https://172.31.255.255/h", false, false},
        url_case{"https://172.32.0.1/h", false, true}, url_case{"https://192.168.1.1/h", false, false},
        url_case{"https://169.254.169.254/latest/meta-data", false, false},
        url_case{"https://100.64.0.1/h", false, false}, url_case{"https://0.0.0.0/h", false, false},
        url_case{"https://224.0.0.1/h", false, false}, url_case{"https://255.255.255.255/h", false, false},
        url_case{"https://127.0.0.1/h", false, false},
        // Literal-IP tricks: decimal, hex, octal, short forms, all refused as non-canonical.
        url_case{"https://2130706433/h", true, false}, url_case{"https://0x7f000001/h", true, false},
        url_case{"https://0177.0.0.1/h", true, false}, url_case{"https://127.1/h", true, false},
        url_case{"https://0x7f.0.0.1/h", true, false}, url_case{"https://167772161/h", false, false},
        url_case{"https://1.2.3.0x4/h", false, false}, url_case{"https://999.1.1.1/h", false, false},
        url_case{"https://010.0.0.1/h", false, false},
        // IPv6 local ranges and IPv4-in-IPv6.
        url_case{"https://[::1]/h", true, false}, url_case{"https://[::]/h", false, false},
        url_case{"https://[fe80::1]/h", false, false}, url_case{"https://[fc00::1]/h", false, false},
        url_case{"https://[fd12:3456::1]/h", false, false}, url_case{"https://[ff02::1]/h", false, false},
        url_case{"https://[::ffff:127.0.0.1]/h", true, false},
        url_case{"https://[::ffff:10.0.0.1]/h", false, false},
        url_case{"https://[fe80::1%25eth0]/h", false, false}, url_case{"https://[::1/h", false, false},
        // Userinfo, percent-encoded hosts, whitespace, backslashes, bad ports, local-only names.
        url_case{"https://user:pw@worker.example/h", false, false},
        url_case{"https://worker.example@10.0.0.1/h", false, false},
        url_case{"http://127.0.0.1@evil.example/h", true, false},
        url_case{"https://%31%30.0.0.1/h", false, false}, url_case{"https://worker.example /h", false, false},
        url_case{"https://worker.example\\@10.0.0.1/", false, false},
        url_case{"https://worker.example:0/h", false, false},
        url_case{"https://worker.example:70000/h", false, false},
        url_case{"https://worker.example:/h", false, false}, url_case{"https://:443/h", false, false},
        url_case{"https://intranet/h", false, false}, url_case{"https://printer.local/h", false, false},
        url_case{"https://metadata.google.internal/h", false, false},
        url_case{"https://a.localhost/h", true, false}, url_case{"", false, false}));

TEST(url_validator, reports_the_parts) {
  auto r = validate_webhook_url("https://Worker.Example:8443/hooks", url_policy{});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->scheme, "https");
  EXPECT_EQ(r->host, "worker.example");
  EXPECT_EQ(r->port, 8443);
}

// PROTOCOL.md 12.8 on the resolved address (DNS rebinding): what each admission rule lets through.
TEST(url_validator, resolved_addresses) {
  using enum address_rule;
  EXPECT_TRUE(validate_webhook_address("93.184.216.34", public_only));
  EXPECT_TRUE(validate_webhook_address("2606:4700::1111", public_only));
  EXPECT_FALSE(validate_webhook_address("10.1.2.3", loopback_too));
  EXPECT_FALSE(validate_webhook_address("169.254.169.254", loopback_too));
  EXPECT_FALSE(validate_webhook_address("127.0.0.1", public_only));
  EXPECT_TRUE(validate_webhook_address("127.0.0.1", loopback_too));
  EXPECT_FALSE(validate_webhook_address("127.0.1.1", loopback_too));
  EXPECT_FALSE(validate_webhook_address("::1", public_only));
  EXPECT_TRUE(validate_webhook_address("::1", loopback_too));
  EXPECT_FALSE(validate_webhook_address("fe80::1", loopback_too));
  EXPECT_FALSE(validate_webhook_address("::ffff:192.168.0.1", loopback_too));
  EXPECT_FALSE(validate_webhook_address("not-an-ip", loopback_too));
  // An allow-listed host may live on the operator's own network, never on the metadata service.
  EXPECT_TRUE(validate_webhook_address("10.1.2.3", private_allowed));
  EXPECT_TRUE(validate_webhook_address("192.168.7.7", private_allowed));
  EXPECT_TRUE(validate_webhook_address("fd12::7", private_allowed));
  EXPECT_FALSE(validate_webhook_address("169.254.169.254", private_allowed));
  EXPECT_FALSE(validate_webhook_address("100.100.100.200", private_allowed));
  EXPECT_FALSE(validate_webhook_address("fd00:ec2::254", private_allowed));
  EXPECT_FALSE(validate_webhook_address("0.0.0.0", private_allowed));
  EXPECT_FALSE(validate_webhook_address("224.0.0.1", private_allowed));
  EXPECT_FALSE(validate_webhook_address("fe80::1", private_allowed));
}

// PROTOCOL.md 12.8 "MAY implement domain allowlisting": named hosts skip the name checks, not https.
TEST(url_validator, allow_listed_hosts) {
  url_policy p{false, {"hooks.corp.internal", "intranet"}};
  auto a = validate_webhook_url("https://Hooks.Corp.Internal/h", p);
  ASSERT_TRUE(a.has_value()) << a.err().reason;
  EXPECT_TRUE(a->allow_listed);
  EXPECT_EQ(address_rule_for(*a), address_rule::private_allowed);
  EXPECT_TRUE(validate_webhook_url("https://intranet:8443/h", p).has_value());
  EXPECT_FALSE(validate_webhook_url("http://intranet/h", p).has_value());
  EXPECT_FALSE(validate_webhook_url("https://other.internal/h", p).has_value());
  EXPECT_FALSE(validate_webhook_url("https://user@intranet/h", p).has_value());
  auto pub = validate_webhook_url("https://worker.example/h", p);
  ASSERT_TRUE(pub.has_value());
  EXPECT_EQ(address_rule_for(*pub), address_rule::public_only);
}

// Plain HTTP and loopback are refused by default; the development exception admits them.
TEST(url_validator, loopback_needs_the_development_exception) {
  auto refused = validate_webhook_url("http://127.0.0.1:8080/h", url_policy{});
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.err().reason.find("allow-loopback-webhooks"), std::string::npos);
  EXPECT_FALSE(validate_webhook_url("http://worker.example/h", url_policy{}).has_value());
  auto dev = validate_webhook_url("http://localhost:8080/h", url_policy{true, {}});
  ASSERT_TRUE(dev.has_value());
  EXPECT_EQ(address_rule_for(*dev), address_rule::loopback_too);
  EXPECT_FALSE(validate_webhook_url("http://worker.example/h", url_policy{true, {}}).has_value());
}

TEST(url_validator, rejects_overlong_urls) {
  std::string url = "https://worker.example/" + std::string(3000, 'a');
  EXPECT_FALSE(validate_webhook_url(url, url_policy{}).has_value());
}

}  // namespace
}  // namespace weir::subscriptions
