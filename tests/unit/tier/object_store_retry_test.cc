// The retry policy over the fault-injecting fake: what is retried (503 SlowDown, 500, timeouts, resets),
// what is not (every other 4xx), the bounded attempts, the backoff with jitter, the ambiguous upload that
// a retry completes with the same bytes, and cancellation.
#include "tier/object_store_retry.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "tier/mem_object_store.h"

namespace weir::tier {
namespace {

object_bytes bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span(s.data(), s.size()));
  return object_bytes(b.begin(), b.end());
}

struct fixture {
  mem_object_store fake;
  std::vector<millis> delays;
  retrying_object_store store{fake, retry_policy{5, millis{100}, millis{1'000}, 4}, 1,
                              [this](millis d) { delays.push_back(d); }};
};

TEST(backoff_delay, full_jitter_under_a_growing_cap) {
  retry_policy p{10, millis{100}, millis{1'000}, 4};
  std::mt19937_64 rng(3);
  for (int round = 0; round < 200; ++round) {
    EXPECT_LE(backoff_delay(p, 1, false, rng), millis{100});
    EXPECT_LE(backoff_delay(p, 2, false, rng), millis{200});
    EXPECT_LE(backoff_delay(p, 3, false, rng), millis{400});
    EXPECT_LE(backoff_delay(p, 9, false, rng), millis{1'000});
    EXPECT_LE(backoff_delay(p, 1, true, rng), millis{400});
    EXPECT_LE(backoff_delay(p, 60, true, rng), millis{1'000});  // no overflow for a late retry
  }
  // Jitter: the delays of one retry number are spread, not one value.
  std::set<std::int64_t> seen;
  for (int i = 0; i < 50; ++i) seen.insert(backoff_delay(p, 3, false, rng).count());
  EXPECT_GT(seen.size(), 10u);
  EXPECT_EQ(backoff_delay(retry_policy{3, millis{0}, millis{0}, 4}, 2, false, rng), millis{0});
}

TEST(retrying_object_store, retries_each_retryable_kind) {
  const std::vector<injected_fault> faults = {
      {store_op::get, fault_kind::error, make_store_error(store_errc::throttled, "slow", 503, "SlowDown")},
      {store_op::get, fault_kind::error,
       make_store_error(store_errc::server_error, "oops", 500, "InternalError")},
      {store_op::get, fault_kind::timeout},
      {store_op::get, fault_kind::reset},
  };
  for (const auto& f : faults) {
    fixture x;
    ASSERT_TRUE(x.fake.put("k", bytes_of("v")));
    x.fake.inject(f, 2);
    auto r = x.store.get_range("k", 0, 0);
    ASSERT_TRUE(r) << r.err().describe();
    EXPECT_EQ(x.fake.requests(store_op::get), 3u);
    EXPECT_EQ(x.delays.size(), 2u);
    EXPECT_EQ(x.store.retries(), 2u);
  }
}

TEST(retrying_object_store, never_retries_other_client_errors) {
  const std::vector<store_error> errors = {
      make_store_error(store_errc::not_found, "", 404, "NoSuchKey"),
      make_store_error(store_errc::auth, "", 403, "SignatureDoesNotMatch"),
      make_store_error(store_errc::precondition_failed, "", 412, "PreconditionFailed"),
      make_store_error(store_errc::conflict, "", 409, "ConditionalRequestConflict"),
      make_store_error(store_errc::bad_range, "", 416, "InvalidRange"),
      make_store_error(store_errc::other, "", 400, "InvalidArgument"),
  };
  for (const auto& e : errors) {
    fixture x;
    x.fake.inject({store_op::put, fault_kind::error, e}, 10);
    auto r = x.store.put("k", bytes_of("v"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.err().kind, e.kind);
    EXPECT_EQ(r.err().attempts, 1);
    EXPECT_EQ(x.fake.requests(store_op::put), 1u);
    EXPECT_TRUE(x.delays.empty());
  }
}

TEST(retrying_object_store, gives_up_after_max_attempts) {
  fixture x;
  x.fake.inject({store_op::head, fault_kind::timeout}, 100);
  auto r = x.store.head("k");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().kind, store_errc::timeout);
  EXPECT_EQ(r.err().attempts, 5);
  EXPECT_EQ(x.fake.requests(store_op::head), 5u);
  ASSERT_EQ(x.delays.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_LE(x.delays[i], millis{std::min(1'000, 100 << i)});
  EXPECT_NE(r.err().describe().find("after 5 attempts"), std::string::npos);
}

TEST(retrying_object_store, throttling_waits_longer) {
  // With the same seed, the delay after a SlowDown is drawn under a four times higher cap.
  fixture slow;
  slow.fake.inject(
      {store_op::list, fault_kind::error, make_store_error(store_errc::throttled, "", 503, "SlowDown")}, 40);
  fixture plain;
  plain.fake.inject({store_op::list, fault_kind::reset}, 40);
  (void)slow.store.list("", "", 10);
  (void)plain.store.list("", "", 10);
  ASSERT_EQ(slow.delays.size(), plain.delays.size());
  for (std::size_t i = 0; i < slow.delays.size(); ++i) EXPECT_GE(slow.delays[i], plain.delays[i]);
}

TEST(retrying_object_store, ambiguous_upload_is_completed_with_the_same_bytes) {
  fixture x;
  x.fake.inject({store_op::put, fault_kind::timeout_after_apply});
  auto r = x.store.put("e0001/g00000001/t1-s1.obj", bytes_of("the bytes"));
  ASSERT_TRUE(r) << r.err().describe();
  EXPECT_EQ(x.fake.requests(store_op::put), 2u);
  EXPECT_EQ(*x.fake.contents("e0001/g00000001/t1-s1.obj"), bytes_of("the bytes"));
}

TEST(retrying_object_store, if_absent_after_an_ambiguous_attempt_says_so) {
  // The first attempt landed but its answer was lost; the retry meets its own object as 412. The error
  // carries attempts > 1 so the caller checks the object instead of blaming another writer.
  fixture x;
  x.fake.inject({store_op::put, fault_kind::reset_after_apply});
  auto r = x.store.put("k", bytes_of("v"), put_options{true});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().kind, store_errc::precondition_failed);
  EXPECT_EQ(r.err().attempts, 2);
  EXPECT_EQ(x.store.head("k")->etag, x.fake.head("k")->etag);
}

TEST(retrying_object_store, random_faults_are_ridden_out) {
  fixture x;
  x.fake.set_random_faults(0.3, 11);
  for (int i = 0; i < 100; ++i) {
    std::string key = fmt::format("k{}", i);
    auto r = x.store.put(key, bytes_of(key));
    ASSERT_TRUE(r) << r.err().describe();
    auto g = x.store.get_range(key, 0, 0);
    ASSERT_TRUE(g) << g.err().describe();
    EXPECT_EQ(g->bytes, bytes_of(key));
  }
  EXPECT_GT(x.store.retries(), 20u);
}

TEST(retrying_object_store, cancel_wakes_a_sleeping_retry) {
  mem_object_store fake;
  fake.inject({store_op::get, fault_kind::timeout}, 100);
  // A real sleep of up to an hour: only cancel() can end it.
  retrying_object_store store(fake, retry_policy{10, millis{3'600'000}, millis{3'600'000}, 1}, 5);
  store_result<range_read> r = make_store_error(store_errc::other, "not run");
  std::thread t([&] { r = store.get_range("k", 0, 0); });
  while (store.retries() == 0)
    std::this_thread::yield();  // the first retry's sleep has begun (or is about to)
  store.cancel();
  t.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().kind, store_errc::timeout);
  EXPECT_LE(fake.requests(store_op::get), 2u);
}

}  // namespace
}  // namespace weir::tier
