#include "cli/stream_args.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace weir::cli {
namespace {

parse_outcome parse(std::vector<std::string> argv) {
  return parse_stream_args(argv);
}

TEST(stream_args, create_with_type_ttl_and_initial_data) {
  auto p = parse({"create", "orders", "--content-type", "text/plain", "--ttl", "3600", "hello"});
  ASSERT_EQ(p.what, parse_outcome::kind::run) << p.text;
  EXPECT_EQ(p.args.verb, stream_verb::create);
  EXPECT_EQ(p.args.stream, "orders");
  EXPECT_EQ(p.args.content_type, "text/plain");
  ASSERT_TRUE(p.args.ttl_secs.has_value());
  EXPECT_EQ(*p.args.ttl_secs, 3600u);
  ASSERT_TRUE(p.args.data.has_value());
  EXPECT_EQ(*p.args.data, "hello");
  EXPECT_EQ(p.args.server, default_server);
  EXPECT_FALSE(p.args.json);
}

TEST(stream_args, a_token_from_the_option_or_the_environment) {
  auto p = parse({"read", "orders", "--token", "wk_abc"});
  ASSERT_EQ(p.what, parse_outcome::kind::run) << p.text;
  EXPECT_EQ(p.args.token, "wk_abc");
  ::setenv("WEIR_TOKEN", "wk_from_env", 1);  // the way to keep it out of ps
  EXPECT_EQ(parse({"read", "orders"}).args.token, "wk_from_env");
  EXPECT_EQ(parse({"read", "orders", "--token", "wk_abc"}).args.token, "wk_abc");  // the option wins
  ::unsetenv("WEIR_TOKEN");
  EXPECT_EQ(parse({"read", "orders"}).args.token, "");
}

TEST(stream_args, options_left_out_stay_unset) {
  auto p = parse({"create", "orders"});
  ASSERT_EQ(p.what, parse_outcome::kind::run) << p.text;
  EXPECT_FALSE(p.args.ttl_secs.has_value());
  EXPECT_FALSE(p.args.data.has_value());
  EXPECT_TRUE(p.args.expires_at.empty());
  EXPECT_FALSE(p.args.closed);
}

TEST(stream_args, global_options_go_before_or_after_the_command) {
  auto before = parse({"--server", "http://127.0.0.1:9000", "--json", "head", "/v1/stream/x"});
  ASSERT_EQ(before.what, parse_outcome::kind::run) << before.text;
  EXPECT_EQ(before.args.verb, stream_verb::head);
  EXPECT_EQ(before.args.server, "http://127.0.0.1:9000");
  EXPECT_TRUE(before.args.json);
  auto after = parse({"head", "x", "--json", "--server", "http://127.0.0.1:9001", "--timeout-ms", "50"});
  ASSERT_EQ(after.what, parse_outcome::kind::run) << after.text;
  EXPECT_TRUE(after.args.json);
  EXPECT_EQ(after.args.server, "http://127.0.0.1:9001");
  EXPECT_EQ(after.args.timeout_ms, 50u);
}

TEST(stream_args, append_from_stdin_by_lines_and_close) {
  auto p = parse({"append", "logs", "--lines", "--close"});
  ASSERT_EQ(p.what, parse_outcome::kind::run) << p.text;
  EXPECT_EQ(p.args.verb, stream_verb::append);
  EXPECT_TRUE(p.args.lines);
  EXPECT_TRUE(p.args.closed);
  EXPECT_FALSE(p.args.data.has_value());
  EXPECT_TRUE(p.args.file.empty());
  auto f = parse({"append", "logs", "--file", "/tmp/x"});
  ASSERT_EQ(f.what, parse_outcome::kind::run) << f.text;
  EXPECT_EQ(f.args.file, "/tmp/x");
}

TEST(stream_args, read_defaults_to_the_start_and_follows_on_request) {
  auto p = parse({"read", "logs"});
  ASSERT_EQ(p.what, parse_outcome::kind::run) << p.text;
  EXPECT_EQ(p.args.verb, stream_verb::read);
  EXPECT_EQ(p.args.offset, "-1");
  EXPECT_FALSE(p.args.follow);
  auto f = parse({"read", "logs", "-f", "--offset", "now"});
  ASSERT_EQ(f.what, parse_outcome::kind::run) << f.text;
  EXPECT_TRUE(f.args.follow);
  EXPECT_EQ(f.args.offset, "now");
}

TEST(stream_args, close_delete_and_fork) {
  EXPECT_EQ(parse({"close", "s"}).args.verb, stream_verb::close);
  EXPECT_EQ(parse({"delete", "s"}).args.verb, stream_verb::remove);
  auto p = parse({"fork", "copy", "--from", "src", "--offset", "0_5", "--sub-offset", "0", "--expires-at",
                  "2030-01-01T00:00:00Z"});
  ASSERT_EQ(p.what, parse_outcome::kind::run) << p.text;
  EXPECT_EQ(p.args.verb, stream_verb::fork);
  EXPECT_EQ(p.args.stream, "copy");
  EXPECT_EQ(p.args.from, "src");
  EXPECT_EQ(p.args.fork_offset, "0_5");
  ASSERT_TRUE(p.args.fork_sub_offset.has_value());
  EXPECT_EQ(*p.args.fork_sub_offset, 0u);
  EXPECT_EQ(p.args.expires_at, "2030-01-01T00:00:00Z");
  EXPECT_FALSE(parse({"fork", "copy", "--from", "src"}).args.fork_sub_offset.has_value());
}

TEST(stream_args, usage_errors) {
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {},                                                                     // no command
           {"frobnicate", "s"},                                                    // unknown command
           {"head"},                                                               // no stream
           {"create", "s", "--ttl", "5", "--expires-at", "2030-01-01T00:00:00Z"},  // both expiries
           {"create", "s", "--ttl", "soon"},                                       // not a number
           {"append", "s", "data", "--file", "f"},                                 // two sources
           {"fork", "copy"},                                                       // no --from
           {"read", "s", "--offset", ""},                                          // empty offset
           {"head", "s", "--bogus"},                                               // unknown option
       }) {
    auto p = parse(argv);
    EXPECT_EQ(p.what, parse_outcome::kind::usage_error) << testing::PrintToString(argv);
    EXPECT_FALSE(p.text.empty()) << testing::PrintToString(argv);
  }
}

TEST(stream_args, help_documents_commands_forms_of_stream_and_exit_codes) {
  auto p = parse({"--help"});
  ASSERT_EQ(p.what, parse_outcome::kind::help);
  for (const char* needle :
       {"create", "append", "read", "head", "close", "delete", "fork", "/v1/stream/orders", "Exit codes",
        "3  not found", "4  conflict", "5  network", "2  bad usage"}) {
    EXPECT_NE(p.text.find(needle), std::string::npos) << needle;
  }
  auto sub = parse({"read", "--help"});
  ASSERT_EQ(sub.what, parse_outcome::kind::help);
  EXPECT_NE(sub.text.find("--follow"), std::string::npos);
}

}  // namespace
}  // namespace weir::cli
