// subscription_replica::snapshot_part / restore_part: one raft group's subscriptions (and, for the group
// that commits them, the node keys) round-trip into a replica in another state, the rest untouched;
// damaged blobs change nothing.
#include <random>

#include <gtest/gtest.h>

#include "subscriptions/subscription_log.h"
#include "subscriptions/subscription_replica.h"
#include "unit/subscriptions/fakes.h"

namespace weir::subscriptions {
namespace {

std::span<const std::byte> view(const std::vector<std::byte>& b) {
  return std::span<const std::byte>(b.data(), b.size());
}

// Part A: ids starting with "a"; part B: the rest.
bool in_a(std::string_view key) {
  return key.starts_with("/v1/stream/a");
}
bool in_b(std::string_view key) {
  return !in_a(key);
}

persisted_subscription sample(std::string id, std::string pattern = "events/*") {
  persisted_subscription p;
  p.root = "/v1/stream/";
  p.origin = "http://127.0.0.1:4437";
  p.id = std::move(id);
  p.config.type = delivery_type::webhook;
  p.config.pattern = std::move(pattern);
  p.config.webhook_url = "https://worker.example/hook";
  p.created_at_wall_ms = 1'700'000'000'123;
  return p;
}

void add(subscription_replica& r, const persisted_subscription& s, std::uint64_t generation, bool failed,
         std::initializer_list<std::pair<std::string, std::uint64_t>> links) {
  const std::string key = subscription_key(s);
  std::string recs;
  append_record(recs, sub_record(s));
  append_record(recs,
                state_record(key, generation, failed, failed ? 2 : 0, failed ? 1'700'000'009'000 : 0, false));
  for (const auto& [path, offset] : links) {
    stream_link l;
    l.glob_link = true;
    l.acked_offset = testing::fake_host::offset(static_cast<int>(offset));
    append_record(recs, link_record(key, path, l));
  }
  ASSERT_TRUE(r.apply(view(encode_records_entry(recs))).has_value());
}

std::string describe(const subscription_replica& r) {
  std::string out;
  for (const auto& [key, s] : r.subscriptions()) {
    out += key + " " + s.config.pattern.value_or("-") + " g" + std::to_string(s.generation) + " f" +
           std::to_string(s.failed) + " fa" + std::to_string(s.failed_attempts) + " r" +
           std::to_string(s.retry_at_wall_ms) + " links";
    for (const auto& [path, l] : s.links) out += " " + path + "@" + l.acked_offset;
    out += "\n";
  }
  for (const auto& [node, k] : r.keys())
    out += "key " + std::to_string(node) + " " + k.kid + " " + k.x + "\n";
  return out;
}

void make_x(subscription_replica& x) {
  add(x, sample("a1"), 7, true, {{"events/one", 4}, {"events/two", 9}});
  add(x, sample("a2", "logs/*"), 3, false, {});
  add(x, sample("b1"), 1, false, {{"events/b", 2}});
  ASSERT_TRUE(x.apply(view(encode_key_entry(1, {"ds_one", "x1"}))).has_value());
  ASSERT_TRUE(x.apply(view(encode_key_entry(2, {"ds_two", "x2"}))).has_value());
}

TEST(subscription_replica_part, a_part_round_trips_and_the_other_part_stays) {
  subscription_replica x;
  make_x(x);
  subscription_replica y;
  add(y, sample("a1", "other/*"), 1, false, {});
  add(y, sample("a9"), 1, false, {});
  add(y, sample("b7"), 5, true, {{"events/z", 1}});
  ASSERT_TRUE(y.apply(view(encode_key_entry(3, {"ds_three", "x3"}))).has_value());
  const auto y_b = y.snapshot_part(in_b, false);

  ASSERT_TRUE(y.restore_part(view(x.snapshot_part(in_a, false)), in_a).has_value());
  EXPECT_EQ(y.snapshot_part(in_a, false), x.snapshot_part(in_a, false));
  EXPECT_EQ(y.snapshot_part(in_b, false), y_b);
  EXPECT_EQ(y.subscriptions().count("/v1/stream/a9"), 0u);
  EXPECT_EQ(y.subscriptions().at("/v1/stream/a1").config.pattern, "events/*");
  ASSERT_EQ(y.keys().size(), 1u);  // a blob without keys leaves them
  EXPECT_EQ(y.keys().at(3).kid, "ds_three");

  // The keys' group: its blob replaces them all.
  ASSERT_TRUE(y.restore_part(view(x.snapshot_part(in_b, true)), in_b).has_value());
  EXPECT_EQ(describe(y), describe(x));
}

TEST(subscription_replica_part, the_same_state_gives_the_same_bytes) {
  subscription_replica x, y;
  make_x(x);
  ASSERT_TRUE(y.apply(view(encode_key_entry(2, {"ds_two", "x2"}))).has_value());
  add(y, sample("b1"), 1, false, {{"events/b", 2}});
  add(y, sample("a2", "logs/*"), 3, false, {});
  add(y, sample("a1"), 7, true, {{"events/two", 9}, {"events/one", 4}});
  ASSERT_TRUE(y.apply(view(encode_key_entry(1, {"ds_one", "x1"}))).has_value());
  EXPECT_EQ(x.snapshot_part(in_a, true), y.snapshot_part(in_a, true));
  subscription_replica empty;
  EXPECT_NE(x.snapshot_part(in_a, true), empty.snapshot_part(in_a, true));
}

TEST(subscription_replica_part, every_truncation_and_mutation_fails_cleanly_and_changes_nothing) {
  subscription_replica x;
  make_x(x);
  const auto blob = x.snapshot_part(in_a, true);
  subscription_replica y;
  add(y, sample("a5"), 2, false, {{"events/q", 3}});
  ASSERT_TRUE(y.apply(view(encode_key_entry(4, {"ds_four", "x4"}))).has_value());
  const std::string before = describe(y);
  for (std::size_t n = 0; n < blob.size(); ++n) {
    status st = y.restore_part(view(blob).first(n), in_a);
    ASSERT_FALSE(st.has_value()) << "prefix " << n;
    EXPECT_EQ(st.err().as<store_errc>(), store_errc::corrupt);
    ASSERT_EQ(describe(y), before) << "prefix " << n;
  }
  std::mt19937_64 rng(11);
  for (int round = 0; round < 2000; ++round) {
    auto bad = blob;
    bad[rng() % bad.size()] = static_cast<std::byte>(rng());
    subscription_replica z;
    add(z, sample("a5"), 2, false, {});
    const std::string z_before = describe(z);
    if (!z.restore_part(view(bad), in_a).has_value()) {
      ASSERT_EQ(describe(z), z_before) << round;
    }
  }
}

TEST(subscription_replica_part, a_blob_of_another_part_or_kind_is_corrupt) {
  subscription_replica x;
  make_x(x);
  subscription_replica y;
  add(y, sample("b9"), 1, false, {});
  const std::string before = describe(y);
  auto st = y.restore_part(view(x.snapshot_part(in_a, false)), in_b);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(describe(y), before);
  const auto entry = encode_key_entry(1, {"k", "x"});
  EXPECT_FALSE(y.restore_part(view(entry), in_a).has_value());
  auto blob = x.snapshot_part(in_a, true);
  blob[9] = std::byte{2};  // flags: an unknown bit
  EXPECT_FALSE(y.restore_part(view(blob), in_a).has_value());
  blob[9] = std::byte{1};
  blob[8] = std::byte{2};  // version
  EXPECT_FALSE(y.restore_part(view(blob), in_a).has_value());
  EXPECT_EQ(describe(y), before);
}

}  // namespace
}  // namespace weir::subscriptions
