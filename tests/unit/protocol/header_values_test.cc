#include "protocol/header_values.h"

#include <gtest/gtest.h>

namespace weir::protocol {
namespace {

TEST(parse_ttl, accepts_plain_decimal_only) {
  EXPECT_EQ(parse_ttl("0"), std::optional<std::uint64_t>(0));
  EXPECT_EQ(parse_ttl("3600"), std::optional<std::uint64_t>(3600));
  for (const char* bad :
       {"", "-1", "+3600", "03600", "3600.0", "3.6e3", "abc", " 1", "1 ", "99999999999999999999"}) {
    EXPECT_FALSE(parse_ttl(bad).has_value()) << bad;
  }
}

TEST(parse_rfc3339_ms, utc_offsets_and_fractions) {
  EXPECT_EQ(parse_rfc3339_ms("1970-01-01T00:00:00Z"), std::optional<std::int64_t>(0));
  EXPECT_EQ(parse_rfc3339_ms("1970-01-01T00:00:01.5Z"), std::optional<std::int64_t>(1500));
  EXPECT_EQ(parse_rfc3339_ms("1970-01-01T01:00:00+01:00"), std::optional<std::int64_t>(0));
  EXPECT_EQ(parse_rfc3339_ms("2024-10-09T00:00:00.000Z"), std::optional<std::int64_t>(1'728'432'000'000));
  EXPECT_EQ(parse_rfc3339_ms("2024-02-29T12:00:00-05:30"), parse_rfc3339_ms("2024-02-29T17:30:00Z"));
  for (const char* bad : {"", "not-a-date", "2024-13-01T00:00:00Z", "2023-02-29T00:00:00Z", "2024-01-01",
                          "2024-01-01T00:00:00", "2024-01-01T25:00:00Z", "2024-01-01T00:00:00.Z",
                          "2024-01-01T00:00:00Zjunk", "2024-01-01T00:00:00+0100"}) {
    EXPECT_FALSE(parse_rfc3339_ms(bad).has_value()) << bad;
  }
}

TEST(parse_producer_number, digits_up_to_2_pow_53_minus_1) {
  EXPECT_EQ(parse_producer_number("0"), std::optional<std::uint64_t>(0));
  EXPECT_EQ(parse_producer_number("9007199254740991"), std::optional<std::uint64_t>((1ull << 53) - 1));
  for (const char* bad : {"", "-1", "1.5", "9007199254740992", "1e3", " 1", "abc"}) {
    EXPECT_FALSE(parse_producer_number(bad).has_value()) << bad;
  }
}

TEST(parse_sub_offset, non_negative_without_leading_zeros) {
  EXPECT_EQ(parse_sub_offset("0"), std::optional<std::uint64_t>(0));
  EXPECT_EQ(parse_sub_offset("12"), std::optional<std::uint64_t>(12));
  for (const char* bad : {"", "-1", "01", "1.0", "x"}) EXPECT_FALSE(parse_sub_offset(bad).has_value()) << bad;
}

TEST(is_true, exactly_true_case_insensitive) {
  EXPECT_TRUE(is_true("true"));
  EXPECT_TRUE(is_true("TRUE"));
  EXPECT_TRUE(is_true("True"));
  for (const char* no : {"", "false", "yes", "1", "true ", "truee"}) EXPECT_FALSE(is_true(no)) << no;
}

TEST(percent_decode, runs_escapes_and_plus) {
  EXPECT_EQ(percent_decode("/v1/stream/plain", false), "/v1/stream/plain");
  EXPECT_EQ(percent_decode("", false), "");
  EXPECT_EQ(percent_decode("%41b%2Fc%2f", false), "Ab/c/");
  EXPECT_EQ(percent_decode("a+b%20c", false), "a+b c");
  EXPECT_EQ(percent_decode("a+b%20c+", true), "a b c ");
  EXPECT_EQ(percent_decode("%00", false), std::string(1, '\0'));
  for (std::string_view bad : {"%", "%4", "a%4", "%G1", "%1G", "x%%41"}) {
    EXPECT_FALSE(percent_decode(bad, false).has_value()) << bad;
  }
}

TEST(parse_query, decodes_and_keeps_order) {
  auto q = parse_query("offset=0000_1&live=long-poll&cursor=12&x=a%2Cb&flag");
  ASSERT_TRUE(q.has_value());
  ASSERT_EQ(q->size(), 5u);
  EXPECT_EQ((*q)[0].name, "offset");
  EXPECT_EQ((*q)[3].value, "a,b");
  EXPECT_EQ((*q)[4].name, "flag");
  EXPECT_EQ((*q)[4].value, "");
  EXPECT_FALSE(parse_query("offset=%zz").has_value());
  EXPECT_FALSE(parse_query("offset=%4").has_value());
}

TEST(check_stream_path, rejects_traversal_and_control_characters) {
  EXPECT_EQ(check_stream_path("/v1/stream/a", 100), path_check::ok);
  EXPECT_EQ(check_stream_path("/v1/stream/a.b/..c", 100), path_check::ok);
  for (const char* bad : {"", "v1/a", "/v1/../a", "/v1/%2e%2E/a", "/v1/%2E/a", "/v1/./a", "/a/..", "/a%00b",
                          "/a%0d%0ab", "/a\tb", "/a%zz", "/a%5c..%5cb"}) {
    EXPECT_EQ(check_stream_path(bad, 100), path_check::bad) << bad;
  }
  EXPECT_EQ(check_stream_path("/" + std::string(200, 'a'), 100), path_check::too_long);
}

TEST(split_reserved_path, finds_the_ds_segment) {
  std::string_view root, rest;
  ASSERT_TRUE(split_reserved_path("/v1/stream/__ds/subscriptions/s1", root, rest));
  EXPECT_EQ(root, "/v1/stream/");
  EXPECT_EQ(rest, "subscriptions/s1");
  ASSERT_TRUE(split_reserved_path("/__ds/jwks.json", root, rest));
  EXPECT_EQ(root, "/");
  EXPECT_EQ(rest, "jwks.json");
  EXPECT_FALSE(split_reserved_path("/v1/stream/__dsx/a", root, rest));
  EXPECT_FALSE(split_reserved_path("/v1/stream/a__ds", root, rest));
}

// A Content-Type must be a media type: `Content-Type: ;;;` is a malformed header (400), not a type that
// mismatches the stream's (409 on append).
TEST(valid_media_type, rfc_9110_media_type) {
  for (const char* ok : {"text/plain", "application/json; charset=utf-8", "text/plain;",
                         "text/plain ;a=b; c=d", "a/b; x=\"q;\\\"z\"", "application/vnd.x+json"}) {
    EXPECT_TRUE(valid_media_type(ok)) << ok;
  }
  for (const char* bad :
       {";;;", "", "text", "text/", "/plain", "text /plain", "text/plain x", "text/plain; x",
        "text/plain; =y", "text/plain; x=", "text/plain; x=\"open", "text/pl@in"}) {
    EXPECT_FALSE(valid_media_type(bad)) << bad;
  }
}

// Host is copied into Location, callback_url and jwks_url, so it must be a plain host[:port].
TEST(valid_url_host, host_and_optional_port_only) {
  for (const char* ok : {"127.0.0.1:4437", "localhost", "[::1]:80", "[2001:db8::1]", "a.b-c_d.example"}) {
    EXPECT_TRUE(valid_url_host(ok)) << ok;
  }
  for (const char* bad : {"", ":80", "a b", "a/b", "a@b", "evil.com\r\nX: y", "h:", "h:1234567", "h:1a",
                          "[::1", "[]", "a%2fb", "[::1]x", "a,b", "a'b", "h:80:81"}) {
    EXPECT_FALSE(valid_url_host(bad)) << bad;
  }
}

TEST(valid_origin, scheme_and_host_only) {
  EXPECT_TRUE(valid_origin("https://streams.example"));
  EXPECT_TRUE(valid_origin("http://127.0.0.1:4437"));
  for (const char* bad :
       {"", "streams.example", "ftp://x", "https://", "https://x/", "https://x/p", "https://a@b"}) {
    EXPECT_FALSE(valid_origin(bad)) << bad;
  }
}

TEST(is_server_path, healthz_and_metrics_and_below) {
  EXPECT_TRUE(is_server_path("/healthz"));
  EXPECT_TRUE(is_server_path("/metrics"));
  EXPECT_TRUE(is_server_path("/metrics/x"));
  EXPECT_FALSE(is_server_path("/healthzz"));
  EXPECT_FALSE(is_server_path("/v1/healthz"));
  EXPECT_TRUE(has_reserved_segment("/v1/__ds/x"));
  EXPECT_FALSE(has_reserved_segment("/v1/_ds/x"));
}

}  // namespace
}  // namespace weir::protocol
