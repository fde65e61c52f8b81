// A whole node on loopback: requests through the real engine, streams on different cores, a fork whose
// source lives on another core, a long-poll woken by an append, and a graceful stop.
#include "server/node.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <thread>

#include "unit/server/http_test_client.h"

namespace weir::server {
namespace {

using test_support::http;
using test_support::reply;

class node_test : public ::testing::Test {
 protected:
  void SetUp() override {
    serve_config cfg;
    cfg.port = 0;
    cfg.threads = 2;
    cfg.long_poll_timeout_ms = 5000;
    dir_ = ::testing::TempDir() + "weir-node-test-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    cfg.data_dir = dir_;
    n_ = std::make_unique<node>(cfg);
    ASSERT_TRUE(n_->start().has_value());
    port_ = n_->port();
    runner_ = std::thread([this] { n_->run(false); });
  }
  void TearDown() override {
    n_->stop();
    runner_.join();
    n_.reset();
    std::filesystem::remove_all(dir_);  // each test is its own process: a directory per test otherwise
  }

  static std::string path_on(unsigned core, const std::string& stem) {
    return test_support::path_on(core, stem);
  }

  std::string dir_;
  std::unique_ptr<node> n_;
  std::uint16_t port_ = 0;
  std::thread runner_;
};

TEST_F(node_test, create_append_read_on_both_cores) {
  for (unsigned core = 0; core < 2; ++core) {
    std::string p = path_on(core, "basic");
    EXPECT_EQ(http(port_, "PUT", p, {{"Content-Type", "text/plain"}}, "ab").status, 201);
    EXPECT_EQ(http(port_, "POST", p, {{"Content-Type", "text/plain"}}, "cd").status, 204);
    reply r = http(port_, "GET", p);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "abcd");
    EXPECT_EQ(r.headers["stream-up-to-date"], "true");
  }
  EXPECT_EQ(http(port_, "GET", "/healthz").status, 200);
}

TEST_F(node_test, fork_with_source_on_another_core_and_cascading_delete) {
  std::string src = path_on(0, "src");
  std::string fork = path_on(1, "fork");
  ASSERT_EQ(http(port_, "PUT", src, {{"Content-Type", "text/plain"}}, "hello").status, 201);
  ASSERT_EQ(http(port_, "PUT", fork,
                 {{"Stream-Forked-From", src}, {"Stream-Fork-Offset", "0000000000000000_0000000000000003"}})
                .status,
            201);
  EXPECT_EQ(http(port_, "POST", fork, {{"Content-Type", "text/plain"}}, "p").body, "");
  EXPECT_EQ(http(port_, "GET", fork).body, "help");
  EXPECT_EQ(http(port_, "DELETE", src).status, 204);  // soft: the fork holds a reference
  EXPECT_EQ(http(port_, "GET", src).status, 410);
  EXPECT_EQ(http(port_, "GET", fork).body, "help");
  EXPECT_EQ(http(port_, "DELETE", fork).status, 204);  // releases the source across cores
  int status = 0;
  for (int i = 0; i < 100 && status != 404; ++i) {
    status = http(port_, "HEAD", src).status;
    if (status != 404) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(status, 404);
}

TEST_F(node_test, long_poll_is_woken_by_an_append) {
  std::string p = path_on(1, "live");
  ASSERT_EQ(http(port_, "PUT", p, {{"Content-Type", "text/plain"}}).status, 201);
  auto waiting =
      std::async(std::launch::async, [&] { return http(port_, "GET", p + "?offset=now&live=long-poll"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(http(port_, "POST", p, {{"Content-Type", "text/plain"}}, "news").status, 204);
  reply r = waiting.get();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "news");
  EXPECT_FALSE(r.headers["stream-cursor"].empty());
}

TEST_F(node_test, bad_requests_do_not_disturb_the_node) {
  EXPECT_EQ(http(port_, "PUT", "/v1/stream/%2e%2e/x").status, 400);
  EXPECT_EQ(http(port_, "GET", "/v1/stream/x?offset=bad").status, 400);
  EXPECT_EQ(http(port_, "PUT", "/v1/stream/j", {{"Content-Type", "application/json"}}, "{nope").status, 400);
  EXPECT_EQ(http(port_, "GET", "/v1/stream/__ds/nothing").status / 100, 4);
  EXPECT_EQ(http(port_, "GET", "/healthz").status, 200);
}

}  // namespace
}  // namespace weir::server
