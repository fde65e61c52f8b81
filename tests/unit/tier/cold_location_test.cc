// --cold s3://BUCKET/PREFIX, --s3-endpoint, and how one key is addressed (path-style with an endpoint,
// virtual-hosted for AWS); credentials never shown.
#include "tier/cold_location.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace weir::tier {
namespace {

TEST(cold_location, parse) {
  auto a = parse_cold_location("s3://my-bucket/weir/prod/");
  ASSERT_TRUE(a) << a.err().reason;
  EXPECT_EQ(a->bucket, "my-bucket");
  EXPECT_EQ(a->prefix, "weir/prod");
  auto b = parse_cold_location("s3://bucket.v2");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->prefix, "");
  EXPECT_FALSE(parse_cold_location("http://bucket/x"));
  EXPECT_FALSE(parse_cold_location("s3://"));
  EXPECT_FALSE(parse_cold_location("s3://Upper/x"));
  EXPECT_FALSE(parse_cold_location("s3://ab/x"));
  EXPECT_FALSE(parse_cold_location("s3://-bucket/x"));
  EXPECT_FALSE(parse_cold_location("s3://bucket/a//b"));
  EXPECT_FALSE(parse_cold_location("s3://bucket/a/../b"));
  EXPECT_FALSE(parse_cold_location("s3://bucket/a/\n"));
}

TEST(cold_location, endpoint) {
  auto e = parse_s3_endpoint("http://127.0.0.1:4568/");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->scheme, "http");
  EXPECT_EQ(e->authority, "127.0.0.1:4568");
  EXPECT_TRUE(parse_s3_endpoint("https://minio.internal"));
  EXPECT_FALSE(parse_s3_endpoint("ftp://x"));
  EXPECT_FALSE(parse_s3_endpoint("127.0.0.1:9000"));
  EXPECT_FALSE(parse_s3_endpoint("http://host/path"));
  EXPECT_FALSE(parse_s3_endpoint("http://user@host"));
  EXPECT_FALSE(parse_s3_endpoint("http://"));
}

TEST(cold_location, path_style_with_an_endpoint) {
  s3_settings s;
  s.location = *parse_cold_location("s3://bkt/pre/fix");
  s.endpoint = *parse_s3_endpoint("http://127.0.0.1:9000");
  auto a = address_for(s, "e0001/a b$.obj");
  EXPECT_EQ(a.host, "127.0.0.1:9000");
  EXPECT_EQ(a.path, "/bkt/pre/fix/e0001/a%20b%24.obj");
  EXPECT_EQ(a.url, "http://127.0.0.1:9000/bkt/pre/fix/e0001/a%20b%24.obj");
  auto list = address_for(s, "", {{"prefix", "pre/fix/e0001/"}, {"list-type", "2"}});
  EXPECT_EQ(list.path, "/bkt");
  EXPECT_EQ(list.url, "http://127.0.0.1:9000/bkt?list-type=2&prefix=pre%2Ffix%2Fe0001%2F");
}

TEST(cold_location, virtual_hosted_for_aws) {
  s3_settings s;
  s.location = *parse_cold_location("s3://bkt");
  s.region = "eu-west-3";
  auto a = address_for(s, "k.obj");
  EXPECT_EQ(a.host, "bkt.s3.eu-west-3.amazonaws.com");
  EXPECT_EQ(a.path, "/k.obj");
  EXPECT_EQ(a.url, "https://bkt.s3.eu-west-3.amazonaws.com/k.obj");
  EXPECT_EQ(address_for(s, "").path, "/");
}

TEST(cold_location, credentials_from_the_environment_are_never_described) {
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "very-secret-value", 1);
  ::setenv("AWS_SESSION_TOKEN", "session-token-value", 1);
  s3_settings s;
  s.location = *parse_cold_location("s3://bkt/p");
  s.credentials = credentials_from_environment();
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::unsetenv("AWS_SESSION_TOKEN");
  EXPECT_EQ(s.credentials.access_key_id, "AKIDEXAMPLE");
  EXPECT_EQ(s.credentials.secret_access_key, "very-secret-value");
  EXPECT_EQ(s.credentials.session_token, "session-token-value");
  std::string d = describe(s);
  EXPECT_NE(d.find("s3://bkt/p"), std::string::npos);
  EXPECT_NE(d.find("AKIDEXAMPLE"), std::string::npos);
  EXPECT_EQ(d.find("very-secret-value"), std::string::npos);
  EXPECT_EQ(d.find("session-token-value"), std::string::npos);
  EXPECT_TRUE(credentials_from_environment().empty());
}

}  // namespace
}  // namespace weir::tier
