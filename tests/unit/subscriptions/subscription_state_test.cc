#include "subscriptions/subscription_state.h"

#include <gtest/gtest.h>

#include "base/clock.h"

namespace weir::subscriptions {
namespace {

constexpr const char* o1 = "0000000000000001_0000000000000010";
constexpr const char* o2 = "0000000000000001_0000000000000020";
constexpr const char* o3 = "0000000000000001_0000000000000030";
constexpr const char* empty_tail = "0000000000000000_0000000000000000";

subscription_config config(delivery_type type, std::int64_t lease = 1000) {
  subscription_config c;
  c.type = type;
  c.pattern = "events/*";
  if (type == delivery_type::webhook) {
    c.webhook_url = "https://w.example/h";
  } else {
    c.wake_stream = "wake/pool";
  }
  c.lease_ttl_ms = lease;
  return c;
}

TEST(offsets, compare_as_specified) {
  EXPECT_TRUE(offset_after(o2, o1));
  EXPECT_FALSE(offset_after(o1, o1));
  EXPECT_FALSE(offset_after(o1, o2));
  EXPECT_TRUE(offset_after(o1, "-1"));
  EXPECT_FALSE(offset_after(empty_tail, "-1"));  // an empty stream has nothing to read
  EXPECT_FALSE(offset_after("-1", "-1"));
}

TEST(subscription_state, links_at_tail_replay_nothing) {
  subscription_state s("s", config(delivery_type::webhook), 0);
  s.link_at_tail("events/a", false, o1);
  EXPECT_FALSE(s.has_pending());
  s.on_tail("events/a", o2);
  EXPECT_TRUE(s.has_pending());
  s.on_tail("events/a", o1);  // tails never go back
  EXPECT_EQ(*s.links().at("events/a").tail_offset, o2);
}

TEST(subscription_state, links_at_start_see_the_first_data) {
  subscription_state s("s", config(delivery_type::webhook), 0);
  s.link_at_start("events/a", false, std::string(empty_tail));
  EXPECT_FALSE(s.has_pending());
  s.link_at_start("events/b", false, std::string(o1));
  EXPECT_TRUE(s.has_pending());
  EXPECT_EQ(s.links().at("events/b").acked_offset, "-1");
}

// PROTOCOL.md 6.1 / 6.4: explicit wins in serialisation; removing it leaves the glob link.
TEST(subscription_state, explicit_and_glob_links) {
  subscription_state s("s", config(delivery_type::webhook), 0);
  s.link_at_tail("events/a", false, o1);
  s.link_at_tail("events/a", true, o2);
  EXPECT_EQ(s.links().at("events/a").link_type(), "explicit");
  EXPECT_EQ(s.links().at("events/a").acked_offset, o1);  // re-linking keeps the cursor
  s.unlink_explicit("events/a");
  ASSERT_TRUE(s.linked("events/a"));
  EXPECT_EQ(s.links().at("events/a").link_type(), "glob");
  s.link_at_start("manual/x", true, std::nullopt);
  s.unlink_explicit("manual/x");
  EXPECT_FALSE(s.linked("manual/x"));
  s.unlink_explicit("manual/none");  // idempotent
}

TEST(subscription_state, delete_and_recreate_restarts_the_cursor) {
  subscription_state s("s", config(delivery_type::webhook), 0);
  s.link_at_tail("events/g", false, o2);
  s.link_at_tail("manual/e", true, o2);
  s.on_deleted("events/g");
  s.on_deleted("manual/e");
  EXPECT_FALSE(s.linked("events/g"));
  ASSERT_TRUE(s.linked("manual/e"));
  EXPECT_FALSE(s.links().at("manual/e").tail_offset);
  s.on_created("manual/e", o1);
  EXPECT_EQ(s.links().at("manual/e").acked_offset, "-1");
  EXPECT_TRUE(s.has_pending());
}

TEST(subscription_state, webhook_wake_fences_and_finishes) {
  subscription_state s("s", config(delivery_type::webhook), 0);
  EXPECT_EQ(s.try_start_wake(0, "w_0"), nullptr);  // nothing pending
  s.link_at_tail("events/a", false, o1);
  s.on_tail("events/a", o2);
  const wake_state* w = s.try_start_wake(100, "w_1");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->generation, 1u);
  EXPECT_EQ(w->lease_deadline_ms, 1100);  // PROTOCOL.md 7.3: webhook lease starts at issue
  ASSERT_EQ(w->snapshot.size(), 1u);
  EXPECT_EQ(w->snapshot[0].tail_offset, o2);
  EXPECT_TRUE(w->snapshot[0].has_pending);
  EXPECT_EQ(s.try_start_wake(100, "w_2"), nullptr);  // one wake in flight

  EXPECT_EQ(s.check_fence(1, "w_1"), fence_result::ok);
  EXPECT_EQ(s.check_fence(0, "w_1"), fence_result::fenced);
  EXPECT_EQ(s.check_fence(1, "w_x"), fence_result::fenced);

  s.on_tail("events/a", o3);                         // arrives after the snapshot
  EXPECT_FALSE(s.apply_acks({{"events/zzz", o2}}));  // unknown stream: nothing moves
  EXPECT_EQ(s.links().at("events/a").acked_offset, o1);
  EXPECT_TRUE(s.apply_acks({{"events/a", o2}}));
  EXPECT_FALSE(s.finish_or_extend(false, 500));
  EXPECT_EQ(s.current_wake()->lease_deadline_ms, 1500);
  EXPECT_TRUE(s.finish_or_extend(true, 600));  // o3 still pending -> next_wake
  EXPECT_EQ(s.check_fence(1, "w_1"), fence_result::fenced);
  const wake_state* w2 = s.try_start_wake(700, "w_2");
  ASSERT_NE(w2, nullptr);
  EXPECT_EQ(w2->generation, 2u);
}

TEST(subscription_state, acks_never_move_backwards) {
  subscription_state s("s", config(delivery_type::webhook), 0);
  s.link_at_tail("events/a", false, o2);
  EXPECT_TRUE(s.apply_acks({{"events/a", o1}}));
  EXPECT_EQ(s.links().at("events/a").acked_offset, o2);
}

// PROTOCOL.md 7.1: {"done": true} auto-acks the snapshot tails; later appends wake again.
TEST(subscription_state, synchronous_done_acks_the_snapshot) {
  subscription_state s("s", config(delivery_type::webhook), 0);
  s.link_at_start("events/a", false, std::string(o1));
  auto gen = s.try_start_wake(0, "w_1")->generation;
  s.on_tail("events/a", o2);
  EXPECT_FALSE(s.on_delivered(gen + 1, true));  // stale result
  EXPECT_TRUE(s.on_delivered(gen, true));
  EXPECT_EQ(s.links().at("events/a").acked_offset, o1);
  EXPECT_FALSE(s.current_wake());
  EXPECT_TRUE(s.has_pending());
}

TEST(subscription_state, failed_delivery_backs_off_exponentially) {
  subscription_state s("s", config(delivery_type::webhook), 0);
  s.link_at_start("events/a", false, std::string(o1));
  std::int64_t now = 0;
  std::vector<std::int64_t> delays;
  for (int i = 0; i < 9; ++i) {
    const wake_state* w = s.try_start_wake(now, "w_" + std::to_string(i));
    ASSERT_NE(w, nullptr) << i;
    auto d = s.on_delivery_failed(w->generation, now, 0.0);
    ASSERT_TRUE(d.has_value());
    delays.push_back(*d);
    EXPECT_TRUE(s.failed());
    EXPECT_EQ(s.try_start_wake(now, "blocked"), nullptr);  // back-off running
    now += *d;
    s.on_retry_due();
  }
  EXPECT_EQ(delays, (std::vector<std::int64_t>{1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000}));
  const wake_state* w = s.try_start_wake(now, "w_ok");
  EXPECT_TRUE(s.on_delivered(w->generation, false));
  EXPECT_FALSE(s.failed());
}

TEST(subscription_state, jitter_is_bounded_to_twenty_percent) {
  subscription_state s("s", config(delivery_type::webhook), 0);
  s.link_at_start("events/a", false, std::string(o1));
  auto gen = s.try_start_wake(0, "w")->generation;
  EXPECT_EQ(*s.on_delivery_failed(gen, 0, 5.0), 1200);
  s.on_retry_due();
  gen = s.try_start_wake(0, "w2")->generation;
  EXPECT_EQ(*s.on_delivery_failed(gen, 0, -0.2), 1600);
}

TEST(subscription_state, webhook_lease_expiry_clears_the_wake) {
  subscription_state s("s", config(delivery_type::webhook, 1000), 0);
  s.link_at_start("events/a", false, std::string(o1));
  auto gen = s.try_start_wake(0, "w_1")->generation;
  EXPECT_FALSE(s.expire_lease(gen, 999));
  EXPECT_FALSE(s.expire_lease(gen + 1, 1000));
  EXPECT_TRUE(s.expire_lease(gen, 1000));
  EXPECT_FALSE(s.current_wake());
  EXPECT_NE(s.try_start_wake(1000, "w_2"), nullptr);
}

// PROTOCOL.md 7.2: claim takes the wake; a second worker gets ALREADY_CLAIMED until the lease runs out.
TEST(subscription_state, pull_wake_claims_and_leases) {
  subscription_state s("s", config(delivery_type::pull_wake, 1000), 0);
  s.link_at_start("events/a", false, std::string(o1));
  const wake_state* w = s.try_start_wake(0, "w_1");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->lease_deadline_ms, 0);  // no lease until claimed
  EXPECT_EQ(s.check_fence(1, "w_1"), fence_result::not_claimed);
  bool busy = false;
  w = s.claim("worker-1", 10, "unused", busy);
  ASSERT_NE(w, nullptr);
  EXPECT_FALSE(busy);
  EXPECT_EQ(w->wake_id, "w_1");
  EXPECT_EQ(w->generation, 1u);
  EXPECT_EQ(*w->holder, "worker-1");
  EXPECT_EQ(w->lease_deadline_ms, 1010);
  EXPECT_EQ(s.claim("worker-2", 500, "w_x", busy), nullptr);
  EXPECT_TRUE(busy);
  // A heartbeat ack extends the lease.
  EXPECT_EQ(s.check_fence(1, "w_1"), fence_result::ok);
  EXPECT_FALSE(s.finish_or_extend(false, 900));
  EXPECT_EQ(s.claim("worker-2", 1500, "w_x", busy), nullptr);
  // After expiry another worker gets a new generation.
  w = s.claim("worker-2", 1900, "w_2", busy);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->generation, 2u);
  EXPECT_EQ(w->wake_id, "w_2");
  EXPECT_EQ(s.check_fence(1, "w_1"), fence_result::fenced);
  s.release();
  EXPECT_FALSE(s.current_wake());
  EXPECT_TRUE(s.has_pending());
}

TEST(subscription_state, claim_without_pending_work_opens_a_generation) {
  subscription_state s("s", config(delivery_type::pull_wake), 0);
  bool busy = true;
  const wake_state* w = s.claim("w", 0, "w_1", busy);
  ASSERT_NE(w, nullptr);
  EXPECT_FALSE(busy);
  EXPECT_EQ(w->generation, 1u);
  EXPECT_TRUE(w->snapshot.empty());
}

}  // namespace
}  // namespace weir::subscriptions
