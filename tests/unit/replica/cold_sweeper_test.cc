// A single node's sweep of cold objects nothing names any more (replica::cold_sweeper, owned by the
// shard's cold_mover) over a partition on its own loop and the in-memory object store: the objects of
// deleted and expired streams go after the grace period, an object another stream still names stays,
// orphans of an earlier run go, a key a restore snapshot names stays, and a store that fails listings or
// deletes makes the sweep try again later without deleting anything else. Time moves on the partition's
// manual clock; each sweep is run to its end by turning the loop.
#include "replica/cold_sweeper.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "replica/cold_mover.h"
#include "tier/mem_object_store.h"
#include "unit/replica/partition_on_loop.h"
#include "unit/streams/command_builders.h"

namespace weir::replica {
namespace {

using namespace std::chrono_literals;
using streams::testing::make_append;
using streams::testing::make_create;
using streams::testing::t0;
using testing::quiet_host;

constexpr std::chrono::milliseconds grace = 60s;

class cold_sweeper_test : public testing::partition_on_loop {
 protected:
  void SetUp() override { open(); }

  void open() {
    partition_options po;
    wal_options wo;
    wo.data_dir = "/data";
    wo.sync = storage::sync_policy{};
    ASSERT_TRUE(open_partition(host_, po, wo, [&] {
      auto term = next_cold_term(env_, "/data/wal/core-0");
      ASSERT_TRUE(term.has_value());
      cold_mover_options o;
      o.upload.group = tier::cold_group(0);
      o.upload.term = tier::leader_term(*term);
      o.upload.max_age = std::chrono::hours(1);  // objects go when a test flushes
      o.scan_interval = std::chrono::hours(1);   // passes and sweeps run when a test asks
      o.sweep.grace = grace;
      o.sweep.interval = std::chrono::hours(1);
      o.sweep.page_keys = 2;  // several pages
      o.sweep.max_removes_in_flight = 2;
      o.sweep.in_snapshot = [this](std::string_view key) { return snapshot_.count(std::string(key)) > 0; };
      raft::executor* ex = ex_.get();
      // The store answers on the loop's next turn, as the workers post their completions.
      auto answer = [ex](auto done, auto r) {
        ex->post([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
      };
      o.sweep.list = [this, answer](std::string prefix, std::string token, int max_keys,
                                    cold_sweeper_options::list_done done) {
        auto send = [this, answer, prefix = std::move(prefix), token = std::move(token), max_keys,
                     done = std::move(done)] {
          answer(std::move(done), store_.list(prefix, token, max_keys));
        };
        if (hold_lists_) return held_.push_back(std::move(send));
        send();
      };
      o.sweep.remove = [this, answer](std::string key, cold_sweeper_options::remove_done done) {
        answer(std::move(done), store_.remove(key));
      };
      part_->attach_cold(
          o,
          [this, answer](std::string key, tier::shared_object_bytes bytes, tier::uploader::put_done done) {
            answer(std::move(done), store_.put(key, *bytes));
          },
          0);
      part_->start_cold();
    }));
  }
  // One pass of the mover, the object being filled sent, and its index record applied and durable.
  void upload_now() {
    on_loop([&] {
      part_->mover()->pass();
      part_->mover()->flush();
      return 0;
    });
    on_loop([] { return 0; });  // the put's answer, then the report and the index record
    ASSERT_EQ(submit(streams::expire_command{"/none", 0}).failure, errc::ok);
  }
  void written(const std::string& path) {
    on_loop([&] {
      part_->mover()->note_written(path);
      return 0;
    });
  }
  // A sweep, run to its end: each turn of the loop delivers the store's answers posted before it.
  cold_sweeper_stats sweep_now() {
    on_loop([&] {
      part_->mover()->sweeper()->sweep();
      return 0;
    });
    for (int i = 0; i < 10'000 && on_loop([&] { return part_->mover()->sweeper()->sweeping(); }); ++i) {
    }
    return on_loop([&] { return part_->mover()->sweeper()->stats(); });
  }
  void advance(std::chrono::milliseconds d) {
    on_loop([&] {
      clock_.advance(d);
      return 0;
    });
  }
  std::set<std::string> keys() const {
    auto k = store_.keys();
    return {k.begin(), k.end()};
  }
  std::set<std::string> indexed_keys() {
    return on_loop([&] {
      std::set<std::string> out;
      for (const auto& k : store_.keys()) {
        if (part_->cold_index().names(k)) out.insert(k);
      }
      return out;
    });
  }
  static std::string key(std::uint64_t term, std::uint64_t seq, std::uint32_t group = 0) {
    return tier::object_key(tier::object_name{tier::cold_epoch(1), tier::cold_group(group),
                                              tier::leader_term(term), tier::upload_seq(seq)});
  }
  void put_raw(const std::string& k) {
    const std::string text = "not an object weir wrote in this run";
    ASSERT_TRUE(store_.put(k, std::as_bytes(std::span(text.data(), text.size()))).has_value());
  }

  tier::mem_object_store store_;
  quiet_host host_;
  std::set<std::string> snapshot_;  // the loop's: keys a retained restore snapshot names
  bool hold_lists_ = false;         // the loop's
  std::vector<std::function<void()>> held_;
};

TEST_F(cold_sweeper_test, a_deleted_streams_objects_go_after_the_grace_and_shared_ones_stay) {
  ASSERT_EQ(submit(make_create("/a")).failure, errc::ok);
  ASSERT_EQ(submit(make_create("/b")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/a", "alpha")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/b", "bravo")).failure, errc::ok);
  upload_now();  // one object for both streams
  ASSERT_EQ(submit(make_append("/a", "+more")).failure, errc::ok);
  written("/a");
  upload_now();  // one for /a alone
  const std::string shared = key(1, 0), alone = key(1, 1);
  ASSERT_EQ(keys(), (std::set<std::string>{shared, alone}));

  ASSERT_EQ(submit(streams::delete_command{"/a", t0, 0}).failure, errc::ok);
  EXPECT_EQ(indexed_keys(), std::set<std::string>{shared});  // /b still reads from it
  // First seen: a candidate, nothing deleted; nor before its grace is over.
  cold_sweeper_stats st = sweep_now();
  EXPECT_EQ(st.objects_deleted, 0u);
  EXPECT_EQ(st.candidates, 1u);
  advance(grace - 1ms);
  EXPECT_EQ(sweep_now().objects_deleted, 0u);
  EXPECT_EQ(keys().size(), 2u);
  advance(1ms);
  st = sweep_now();
  EXPECT_EQ(st.objects_deleted, 1u);
  EXPECT_GT(st.bytes_deleted, 0u);
  EXPECT_EQ(st.candidates, 0u);
  EXPECT_EQ(st.sweeps, 3u);
  EXPECT_EQ(keys(), std::set<std::string>{shared});
  // The shared object stays for as long as /b names it.
  advance(grace * 3);
  sweep_now();
  EXPECT_EQ(sweep_now().objects_deleted, 1u);
  EXPECT_EQ(keys(), std::set<std::string>{shared});
  // Deleting /b too frees it.
  ASSERT_EQ(submit(streams::delete_command{"/b", t0, 0}).failure, errc::ok);
  sweep_now();
  advance(grace);
  EXPECT_EQ(sweep_now().objects_deleted, 2u);
  EXPECT_TRUE(keys().empty());
}

TEST_F(cold_sweeper_test, orphans_of_an_earlier_run_go_and_nothing_else_is_touched) {
  ASSERT_EQ(submit(make_create("/live")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/live", "kept")).failure, errc::ok);
  upload_now();
  // An earlier run's upload whose record never reached the log, a key of this run's term the uploader
  // has not reported (a later sequence), another group's object and a key that is no object key.
  const std::string earlier = key(0, 7), unreported = key(1, 9), other_group = key(0, 0, 1);
  const std::string foreign = "e0001/g00000000/notes.txt";
  for (const auto& k : {earlier, unreported, other_group, foreign}) put_raw(k);
  sweep_now();
  advance(grace);
  const cold_sweeper_stats st = sweep_now();
  EXPECT_EQ(st.objects_deleted, 1u);
  EXPECT_EQ(keys(), (std::set<std::string>{key(1, 0), unreported, other_group, foreign}));
}

TEST_F(cold_sweeper_test, objects_of_the_run_before_a_restart_stay_while_indexed) {
  ASSERT_EQ(submit(make_create("/r")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/r", "one")).failure, errc::ok);
  upload_now();
  ASSERT_EQ(submit(make_create("/gone")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/gone", "two")).failure, errc::ok);
  written("/gone");
  upload_now();
  ASSERT_EQ(submit(streams::delete_command{"/gone", t0, 0}).failure, errc::ok);
  close();
  open();  // term 2: every key of term 1 is settled
  sweep_now();
  advance(grace);
  EXPECT_EQ(sweep_now().objects_deleted, 1u);
  EXPECT_EQ(keys(), std::set<std::string>{key(1, 0)});
}

TEST_F(cold_sweeper_test, a_key_a_restore_snapshot_names_stays) {
  ASSERT_EQ(submit(make_create("/s")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/s", "snapshotted")).failure, errc::ok);
  upload_now();
  on_loop([&] { return snapshot_.insert(key(1, 0)).second; });
  ASSERT_EQ(submit(streams::delete_command{"/s", t0, 0}).failure, errc::ok);
  sweep_now();
  advance(grace * 2);
  EXPECT_EQ(sweep_now().objects_deleted, 0u);
  EXPECT_EQ(keys().size(), 1u);
  // The snapshot is no longer retained: the key starts its grace then.
  on_loop([&] { return snapshot_.erase(key(1, 0)); });
  EXPECT_EQ(sweep_now().objects_deleted, 0u);
  advance(grace);
  EXPECT_EQ(sweep_now().objects_deleted, 1u);
  EXPECT_TRUE(keys().empty());
}

TEST_F(cold_sweeper_test, failed_listings_and_deletes_delete_nothing_else_and_are_tried_again) {
  ASSERT_EQ(submit(make_create("/x")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/x", "doomed")).failure, errc::ok);
  upload_now();
  ASSERT_EQ(submit(make_create("/y")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/y", "kept")).failure, errc::ok);
  written("/y");
  upload_now();
  for (std::uint64_t s = 0; s < 4; ++s) put_raw(key(0, s));  // earlier run's orphans: pages of 2 keys
  ASSERT_EQ(submit(streams::delete_command{"/x", t0, 0}).failure, errc::ok);
  sweep_now();
  advance(grace);
  // The listing fails: nothing is deleted, the sweep ends.
  tier::injected_fault list_fault;
  list_fault.op = tier::store_op::list;
  list_fault.error = tier::make_store_error(tier::store_errc::server_error, "injected", 500);
  store_.inject(list_fault);
  cold_sweeper_stats st = sweep_now();
  EXPECT_EQ(st.list_failures, 1u);
  EXPECT_EQ(st.objects_deleted, 0u);
  EXPECT_EQ(keys().size(), 6u);
  // Two deletes fail (one refused, one whose answer was lost after it was applied): each is counted,
  // the others go.
  tier::injected_fault refused;
  refused.op = tier::store_op::remove;
  refused.error = tier::make_store_error(tier::store_errc::auth, "injected", 403, "AccessDenied");
  store_.inject(refused);
  tier::injected_fault lost;
  lost.op = tier::store_op::remove;
  lost.kind = tier::fault_kind::timeout_after_apply;
  store_.inject(lost);
  st = sweep_now();
  EXPECT_EQ(st.delete_failures, 2u);
  EXPECT_EQ(st.objects_deleted, 3u);
  EXPECT_EQ(keys().size(), 2u);  // /y's object and the refused one
  EXPECT_TRUE(keys().count(key(1, 1)));
  // A later sweep finds the refused key again and deletes it after its grace.
  sweep_now();
  advance(grace);
  st = sweep_now();
  EXPECT_EQ(st.objects_deleted, 4u);
  EXPECT_EQ(keys(), std::set<std::string>{key(1, 1)});
}

TEST_F(cold_sweeper_test, an_expired_streams_objects_go_too_and_a_replay_agrees) {
  streams::create_command c = make_create("/e");
  c.expiry.expires_at_ms = t0 + 5'000;
  ASSERT_EQ(submit(c).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/e", "short-lived")).failure, errc::ok);
  ASSERT_EQ(submit(make_create("/k")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/k", "kept")).failure, errc::ok);
  upload_now();
  ASSERT_EQ(indexed_keys().size(), 1u);
  ASSERT_EQ(submit(make_append("/e", "+more")).failure, errc::ok);
  written("/e");
  upload_now();
  ASSERT_EQ(indexed_keys().size(), 2u);
  // The shard's expiry sweep submits this once the stream's time is up: its extents go, as a delete's.
  ASSERT_EQ(submit(streams::expire_command{"/e", t0 + 6'000}).failure, errc::ok);
  EXPECT_EQ(on_loop([&] { return part_->cold_index().cold_end("/e").has_value(); }), false);
  EXPECT_EQ(indexed_keys(), std::set<std::string>{key(1, 0)});
  close();
  open();  // the replay of the expiry drops the same extents
  EXPECT_EQ(indexed_keys(), std::set<std::string>{key(1, 0)});
  sweep_now();
  advance(grace);
  EXPECT_EQ(sweep_now().objects_deleted, 1u);
  EXPECT_EQ(keys(), std::set<std::string>{key(1, 0)});
}

TEST_F(cold_sweeper_test, a_listing_answered_after_stop_does_nothing) {
  put_raw(key(0, 0));
  sweep_now();
  advance(grace);
  on_loop([&] {
    hold_lists_ = true;
    part_->mover()->sweeper()->sweep();
    part_->stop();
    for (auto& send : held_) send();
    held_.clear();
    return 0;
  });
  on_loop([] { return 0; });  // the listing's answer
  EXPECT_EQ(keys().size(), 1u);
  EXPECT_EQ(store_.requests(tier::store_op::remove), 0u);
}

}  // namespace
}  // namespace weir::replica
