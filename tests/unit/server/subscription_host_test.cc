// The subscription service inside a whole node on loopback (docs/subscriptions.md): webhook targets on
// loopback are refused unless allow-loopback-webhooks is set, the subscription limits come from the
// node's settings, and subscriptions come back after a restart from subscriptions.log.
#include "server/subscription_host.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "server/node.h"
#include "unit/server/http_test_client.h"

namespace weir::server {
namespace {

using test_support::http;
using test_support::reply;

const std::string subs = "/v1/stream/__ds/subscriptions/";
const std::map<std::string, std::string> json_type{{"Content-Type", "application/json"}};

// One node run on a data directory that outlives it.
class running_node {
 public:
  explicit running_node(serve_config cfg) : n_(std::make_unique<node>(std::move(cfg))) {
    EXPECT_TRUE(n_->start().has_value());
    runner_ = std::thread([this] { n_->run(false); });
  }
  ~running_node() {
    n_->stop();
    runner_.join();
  }
  std::uint16_t port() const { return n_->port(); }

 private:
  std::unique_ptr<node> n_;
  std::thread runner_;
};

serve_config config(const std::string& dir) {
  serve_config cfg;
  cfg.port = 0;
  cfg.threads = 2;
  cfg.data_dir = dir;
  return cfg;
}

std::string fresh_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "weir-subs-" + name + "-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

const std::string loopback_hook =
    R"({"type":"webhook","pattern":"events/*","webhook":{"url":"http://127.0.0.1:9/hook"}})";

TEST(subscription_host, loopback_webhooks_need_the_setting) {
  std::string dir = fresh_dir("loopback");
  {
    running_node n(config(dir));
    reply r = http(n.port(), "PUT", subs + "a", json_type, loopback_hook);
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("WEBHOOK_URL_REJECTED"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("allow-loopback-webhooks"), std::string::npos) << r.body;
  }
  serve_config dev = config(dir);
  dev.allow_loopback_webhooks = true;
  {
    running_node n(dev);
    EXPECT_EQ(http(n.port(), "PUT", subs + "a", json_type, loopback_hook).status, 201);
  }  // stopped (journal thread included) before its directory goes
  std::filesystem::remove_all(dir);
}

TEST(subscription_host, limits_come_from_the_settings) {
  std::string dir = fresh_dir("limits");
  serve_config cfg = config(dir);
  cfg.max_subscriptions = 1;
  cfg.max_subscription_pattern_bytes = 8;
  auto n = std::make_unique<running_node>(cfg);
  const std::string pull = R"({"type":"pull-wake","pattern":"%s","wake_stream":"wake/pool"})";
  auto body = [&](const std::string& pattern) {
    std::string b = pull;
    return b.replace(b.find("%s"), 2, pattern);
  };
  reply long_pattern = http(n->port(), "PUT", subs + "a", json_type, body("events/abc/*"));
  EXPECT_EQ(long_pattern.status, 400);
  EXPECT_NE(long_pattern.body.find("max-subscription-pattern-bytes (8 bytes)"), std::string::npos);
  EXPECT_EQ(http(n->port(), "PUT", subs + "a", json_type, body("e/*")).status, 201);
  reply second = http(n->port(), "PUT", subs + "b", json_type, body("e/*"));
  EXPECT_EQ(second.status, 403);
  EXPECT_NE(second.body.find("max-subscriptions (1)"), std::string::npos) << second.body;
  n.reset();  // stopped (journal thread included) before its directory goes
  std::filesystem::remove_all(dir);
}

// Links written as changes, end to end: streams created under a wildcard are linked, the links reach
// the log as changes, and a restarted node reads them back.
TEST(subscription_host, wildcard_links_survive_a_restart) {
  std::string dir = fresh_dir("restart");
  constexpr int streams = 40;
  std::uintmax_t log_after_create = 0;
  {
    running_node n(config(dir));
    ASSERT_EQ(http(n.port(), "PUT", subs + "all", json_type,
                   R"({"type":"pull-wake","pattern":"events/*","wake_stream":"wake/pool"})")
                  .status,
              201);
    log_after_create = std::filesystem::file_size(dir + "/subscriptions.log");
    for (int i = 0; i < streams; ++i) {
      ASSERT_EQ(
          http(n.port(), "PUT", "/v1/stream/events/s" + std::to_string(i), {{"Content-Type", "text/plain"}})
              .status,
          201);
    }
    // Stream events reach the subscription core after the creates are answered: wait for the links.
    int linked = 0;
    for (int tries = 0; tries < 2'000 && linked < streams; ++tries) {
      std::string body = http(n.port(), "GET", subs + "all").body;
      linked = 0;
      for (auto p = body.find("\"link_type\""); p != std::string::npos; p = body.find("\"link_type\"", p + 1))
        ++linked;
    }
    ASSERT_EQ(linked, streams);
  }
  // One small link record per stream, not the whole state per stream.
  std::uintmax_t grown = std::filesystem::file_size(dir + "/subscriptions.log") - log_after_create;
  EXPECT_LT(grown, static_cast<std::uintmax_t>(streams) * 400u);
  EXPECT_FALSE(std::filesystem::exists(dir + "/subscriptions.json"));

  {  // the node (and its journal thread) is gone before the directory is removed
    running_node again(config(dir));
    reply r = http(again.port(), "GET", subs + "all");
    ASSERT_EQ(r.status, 200);
    for (int i = 0; i < streams; ++i) {
      EXPECT_NE(r.body.find("\"events/s" + std::to_string(i) + "\""), std::string::npos) << i;
    }
    // Linked before their first data (PROTOCOL.md 6.2), so their cursors are at the start: a backfill after
    // the restart would have linked them at their tails instead, so these come from the log.
    int at_start = 0;
    for (auto p = r.body.find(R"("acked_offset":"-1")"); p != std::string::npos;
         p = r.body.find(R"("acked_offset":"-1")", p + 1))
      ++at_start;
    EXPECT_EQ(at_start, streams) << r.body;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace weir::server
