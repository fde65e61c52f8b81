#include "server/serve_config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace weir::server {
namespace {

std::string write_temp(const std::string& text) {
  std::string path = ::testing::TempDir() + "weir_config_" +
                     std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".toml";
  std::ofstream(path) << text;
  return path;
}

TEST(serve_config, defaults_are_valid) {
  serve_config c;
  EXPECT_EQ(c.host, "127.0.0.1");
  EXPECT_EQ(c.port, 4437);
  EXPECT_EQ(c.data_dir, "./weir-data");
  EXPECT_EQ(c.body_limit, 64ull << 20);
  EXPECT_NO_THROW(validate(c));
}

TEST(serve_config, listen) {
  serve_config c;
  apply_listen(c, "0.0.0.0:8080");
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(c.port, 8080);
  apply_listen(c, "[::1]:9");
  EXPECT_EQ(c.host, "::1");
  for (const char* bad : {"", "8080", ":80", "host:", "host:99999", "host:8o"}) {
    EXPECT_THROW(apply_listen(c, bad), config_error) << bad;
  }
}

TEST(serve_config, toml_file) {
  serve_config c;
  load_config_file(c, write_temp("listen = \"127.0.0.1:5000\"\ndata_dir = \"/tmp/x\"\nthreads = 3\n"
                                 "long_poll_timeout_ms = 500\nbody_limit = 1024\nlog_level = \"warn\"\n"));
  EXPECT_EQ(c.port, 5000);
  EXPECT_EQ(c.data_dir, "/tmp/x");
  EXPECT_EQ(c.threads, 3u);
  EXPECT_EQ(c.long_poll_timeout_ms, 500);
  EXPECT_EQ(c.body_limit, 1024u);
  EXPECT_EQ(c.log_level, "warn");
  EXPECT_NO_THROW(validate(c));
}

TEST(serve_config, rejects_unknown_and_invalid_settings) {
  serve_config c;
  EXPECT_THROW(load_config_file(c, write_temp("colour = \"blue\"\n")), config_error);
  EXPECT_THROW(load_config_file(c, write_temp("threads = \"two\"\n")), config_error);
  EXPECT_THROW(load_config_file(c, write_temp("threads = -1\n")), config_error);
  EXPECT_THROW(load_config_file(c, write_temp("this is not toml\n")), config_error);
  EXPECT_THROW(load_config_file(c, "/nonexistent/weir.toml"), config_error);
  serve_config bad_level;
  bad_level.log_level = "loud";
  EXPECT_THROW(validate(bad_level), config_error);
  serve_config bad_poll;
  bad_poll.long_poll_timeout_ms = 0;
  EXPECT_THROW(validate(bad_poll), config_error);
}

}  // namespace
}  // namespace weir::server
