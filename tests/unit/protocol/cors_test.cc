#include "protocol/cors.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace weir::protocol {
namespace {

std::optional<std::string> find(const response& r, std::string_view name) {
  auto v = r.find(name);
  return v ? std::optional<std::string>(std::string(*v)) : std::nullopt;
}

TEST(cors, without_a_list_every_origin_gets_the_wildcard_and_no_credentials) {
  cors_policy any;
  response r;
  add_cors_headers(r, any.grant(std::string_view("https://app.example")));
  EXPECT_EQ(find(r, "Access-Control-Allow-Origin"), std::optional<std::string>("*"));
  EXPECT_FALSE(find(r, "Access-Control-Allow-Credentials"));
  EXPECT_FALSE(find(r, "Vary"));
}

TEST(cors, a_listed_origin_is_echoed_with_credentials_and_vary) {
  cors_policy listed("https://app.example, http://127.0.0.1:8000");
  response r;
  add_cors_headers(r, listed.grant(std::string_view("http://127.0.0.1:8000")));
  EXPECT_EQ(find(r, "Access-Control-Allow-Origin"), std::optional<std::string>("http://127.0.0.1:8000"));
  EXPECT_EQ(find(r, "Access-Control-Allow-Credentials"), std::optional<std::string>("true"));
  EXPECT_EQ(find(r, "Vary"), std::optional<std::string>("Origin"));
}

TEST(cors, an_unlisted_or_absent_origin_gets_no_credentials_but_vary) {
  cors_policy listed("https://app.example");
  for (std::optional<std::string_view> origin :
       {std::optional<std::string_view>("https://evil.example"),
        std::optional<std::string_view>("https://app.example.evil"),
        std::optional<std::string_view>("https://APP.example"), std::optional<std::string_view>("null"),
        std::optional<std::string_view>()}) {
    response r;
    add_cors_headers(r, listed.grant(origin));
    EXPECT_EQ(find(r, "Access-Control-Allow-Origin"), std::optional<std::string>("*"));
    EXPECT_FALSE(find(r, "Access-Control-Allow-Credentials"));
    EXPECT_EQ(find(r, "Vary"), std::optional<std::string>("Origin"));
  }
}

TEST(cors, the_setting_accepts_origins_only) {
  EXPECT_EQ(check_cors_origins(""), "");
  EXPECT_EQ(check_cors_origins("https://app.example,http://127.0.0.1:8000"), "");
  EXPECT_EQ(check_cors_origins("https://a.example, https://b.example:8443"), "");
  EXPECT_NE(check_cors_origins("*"), "");
  EXPECT_NE(check_cors_origins("https://app.example/"), "");
  EXPECT_NE(check_cors_origins("https://app.example/path"), "");
  EXPECT_NE(check_cors_origins("app.example"), "");
  EXPECT_NE(check_cors_origins("https://a.example,,https://b.example"), "");
  EXPECT_NE(check_cors_origins("https://a.example,").find("got ''"), std::string::npos);
}

}  // namespace
}  // namespace weir::protocol
