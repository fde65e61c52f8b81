// The subscription entries of a cluster's raft groups (subscription_replica.h): their encoding, strict
// decoding, and what applying them builds.
#include "subscriptions/subscription_replica.h"

#include <gtest/gtest.h>

#include "subscriptions/subscription_log.h"
#include "unit/subscriptions/fakes.h"

namespace weir::subscriptions {
namespace {

std::span<const std::byte> view(const std::vector<std::byte>& b) {
  return std::span<const std::byte>(b.data(), b.size());
}

persisted_subscription sample(std::string id) {
  persisted_subscription p;
  p.root = "/v1/stream/";
  p.origin = "http://127.0.0.1:4437";
  p.id = std::move(id);
  p.config.type = delivery_type::webhook;
  p.config.pattern = "events/*";
  p.config.webhook_url = "https://worker.example/hook";
  p.created_at_wall_ms = 1'700'000'000'123;
  return p;
}

std::string records(std::initializer_list<std::string> payloads) {
  std::string out;
  for (const auto& p : payloads) append_record(out, p);
  return out;
}

TEST(subscription_replica, a_key_entry_round_trips) {
  const node_public_key key{"ds_abc", std::string(43, 'x')};
  auto bytes = encode_key_entry(3, key);
  auto e = decode_replica_entry(view(bytes));
  ASSERT_TRUE(e.has_value()) << e.err().reason;
  const auto* k = std::get_if<key_entry>(&*e);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->node, 3u);
  EXPECT_EQ(k->key, key);
  // Every shorter prefix and any trailing byte are malformed.
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(decode_replica_entry(view(bytes).first(n)).has_value()) << n;
  }
  bytes.push_back(std::byte{0});
  EXPECT_FALSE(decode_replica_entry(view(bytes)).has_value());
}

TEST(subscription_replica, unknown_ops_are_malformed) {
  EXPECT_FALSE(decode_replica_entry({}).has_value());
  std::vector<std::byte> bad{std::byte{0}};
  EXPECT_FALSE(decode_replica_entry(view(bad)).has_value());
  bad[0] = std::byte{3};
  EXPECT_FALSE(decode_replica_entry(view(bad)).has_value());
}

TEST(subscription_replica, records_build_the_subscriptions) {
  subscription_replica r;
  const persisted_subscription s = sample("sub-1");
  const std::string key = subscription_key(s);
  stream_link l;
  l.glob_link = true;
  l.acked_offset = testing::fake_host::offset(4);
  ASSERT_TRUE(r.apply(
      view(encode_records_entry(records({sub_record(s), link_record(key, "events/a", l),
                                         state_record(key, 7, true, 2, 1'700'000'009'000, false)})))));
  ASSERT_EQ(r.subscriptions().size(), 1u);
  const auto& got = r.subscriptions().at(key);
  EXPECT_EQ(got.id, "sub-1");
  EXPECT_EQ(got.config.hash(), s.config.hash());
  EXPECT_EQ(got.links.at("events/a").acked_offset, testing::fake_host::offset(4));
  EXPECT_EQ(got.generation, 7u);
  EXPECT_TRUE(got.failed);
  EXPECT_EQ(got.retry_at_wall_ms, 1'700'000'009'000);

  ASSERT_TRUE(r.apply(view(encode_records_entry(records({unlink_record(key, "events/a")})))));
  EXPECT_TRUE(r.subscriptions().at(key).links.empty());
  ASSERT_TRUE(r.apply(view(encode_records_entry(records({delete_record(key)})))));
  EXPECT_TRUE(r.subscriptions().empty());
}

TEST(subscription_replica, a_record_that_makes_no_sense_is_an_error_after_the_ones_before_it) {
  subscription_replica r;
  const persisted_subscription s = sample("a");
  auto st = r.apply(view(encode_records_entry(
      records({sub_record(s), state_record("/v1/stream/nope", 1, false, 0, 0, false)}))));
  EXPECT_FALSE(st.has_value());
  EXPECT_EQ(r.subscriptions().count("/v1/stream/a"), 1u);  // every node stops at the same record
}

TEST(subscription_replica, a_record_cut_short_is_an_error) {
  subscription_replica r;
  std::string rec = records({sub_record(sample("a"))});
  rec.pop_back();
  EXPECT_FALSE(r.apply(view(encode_records_entry(rec))).has_value());
  EXPECT_TRUE(r.subscriptions().empty());
  std::string flipped = records({sub_record(sample("a"))});
  flipped[10] ^= 1;  // the CRC no longer matches
  EXPECT_FALSE(r.apply(view(encode_records_entry(flipped))).has_value());
}

TEST(subscription_replica, a_node_key_is_replaced_by_a_newer_one) {
  subscription_replica r;
  ASSERT_TRUE(r.apply(view(encode_key_entry(1, {"ds_one", "x1"}))));
  ASSERT_TRUE(r.apply(view(encode_key_entry(2, {"ds_two", "x2"}))));
  ASSERT_TRUE(r.apply(view(encode_key_entry(1, {"ds_new", "x3"}))));
  ASSERT_EQ(r.keys().size(), 2u);
  EXPECT_EQ(r.keys().at(1).kid, "ds_new");
  EXPECT_EQ(r.keys().at(2).x, "x2");
}

}  // namespace
}  // namespace weir::subscriptions
