#include "subscriptions/subscription_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "subscriptions/crypto_util.h"

namespace weir::subscriptions {
namespace {

persisted_subscription sample() {
  persisted_subscription p;
  p.root = "/v1/stream/";
  p.origin = "http://127.0.0.1:4437";
  p.id = "sub-1";
  p.config.type = delivery_type::webhook;
  p.config.pattern = "events/*";
  p.config.streams = {"manual/a"};
  p.config.webhook_url = "http://127.0.0.1:9/hook";
  p.config.lease_ttl_ms = 2000;
  p.config.description = "with \"quotes\" and \n newline";
  p.created_at_wall_ms = 1'700'000'000'123;
  stream_link l;
  l.explicit_link = true;
  l.acked_offset = "0000000000000000_0000000000000007";
  l.tail_offset = "0000000000000000_0000000000000009";
  p.links["manual/a"] = l;
  stream_link g;
  g.glob_link = true;
  p.links["events/x"] = g;
  p.generation = 12;
  p.failed = true;
  p.failed_attempts = 3;
  p.retry_at_wall_ms = 1'700'000'004'000;
  return p;
}

TEST(subscription_store, round_trips_a_snapshot) {
  persisted_subscription pull;
  pull.root = "/r/";
  pull.origin = "http://h";
  pull.id = "p";
  pull.config.type = delivery_type::pull_wake;
  pull.config.streams = {"a"};
  pull.config.wake_stream = "wake/pool";
  auto decoded = decode_snapshot(encode_snapshot({sample(), pull}));
  ASSERT_TRUE(decoded.has_value()) << decoded.err().reason;
  ASSERT_EQ(decoded->size(), 2u);
  const auto& a = (*decoded)[0];
  const auto want = sample();
  EXPECT_EQ(a.root, want.root);
  EXPECT_EQ(a.origin, want.origin);
  EXPECT_EQ(a.id, want.id);
  EXPECT_EQ(a.config.hash(), want.config.hash());
  EXPECT_EQ(a.config.description, want.config.description);
  EXPECT_EQ(a.created_at_wall_ms, want.created_at_wall_ms);
  EXPECT_EQ(a.generation, 12u);
  EXPECT_TRUE(a.failed);
  EXPECT_EQ(a.failed_attempts, 3);
  EXPECT_EQ(a.retry_at_wall_ms, want.retry_at_wall_ms);
  ASSERT_EQ(a.links.size(), 2u);
  EXPECT_TRUE(a.links.at("manual/a").explicit_link);
  EXPECT_FALSE(a.links.at("manual/a").glob_link);
  EXPECT_EQ(a.links.at("manual/a").acked_offset, "0000000000000000_0000000000000007");
  EXPECT_FALSE(a.links.at("manual/a").tail_offset);  // tails are re-learned, not stored
  EXPECT_TRUE(a.links.at("events/x").glob_link);
  EXPECT_EQ(a.links.at("events/x").acked_offset, "-1");
  EXPECT_EQ((*decoded)[1].config.wake_stream, "wake/pool");
  EXPECT_EQ((*decoded)[1].config.hash(), pull.config.hash());
}

TEST(subscription_store, rejects_corrupt_snapshots) {
  EXPECT_FALSE(decode_snapshot("").has_value());
  EXPECT_FALSE(decode_snapshot("{}").has_value());
  EXPECT_FALSE(decode_snapshot(R"({"version":2,"subscriptions":[]})").has_value());
  EXPECT_TRUE(decode_snapshot(R"({"version":1,"subscriptions":[]})").has_value());
  std::string text = encode_snapshot({sample()});
  EXPECT_FALSE(decode_snapshot(text.substr(0, text.size() / 2)).has_value());
  std::string bad_config = text;
  bad_config.replace(bad_config.find("\"webhook\""), 9, "\"webhoox\"");
  EXPECT_FALSE(decode_snapshot(bad_config).has_value());
}

}  // namespace
}  // namespace weir::subscriptions
