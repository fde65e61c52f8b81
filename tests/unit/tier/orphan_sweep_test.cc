// orphan_sweep: each rule that keeps an object (a foreign key, another group, named by the index or a
// snapshot, a record that may still apply, a later term, the grace period) and the deletion once none
// does; and, end to end over the fake store, a leader that stepped down after an upload that landed
// unreported: the next leader's sweep deletes that orphan and nothing the index names.
#include "tier/orphan_sweep.h"

#include <gtest/gtest.h>

#include <set>

#include "support/sim/sim_scheduler.h"
#include "tier/cold_index.h"
#include "tier/mem_object_store.h"
#include "tier/uploader.h"

namespace weir::tier {
namespace {

using namespace std::chrono_literals;

std::string key(std::uint16_t epoch, std::uint32_t group, std::uint64_t term, std::uint64_t seq) {
  return object_key(object_name{cold_epoch(epoch), cold_group(group), leader_term(term), upload_seq(seq)});
}

list_page page_of(const std::vector<std::string>& keys) {
  list_page p;
  for (const auto& k : keys) p.objects.push_back(object_info{k, 100, "e"});
  return p;
}

struct names {
  std::set<std::string, std::less<>> indexed, snapshot;
  sweep_state state(std::int64_t now_ms, bool term_settled, std::uint64_t settled_seq) {
    sweep_state s;
    s.epoch = cold_epoch(1);
    s.group = cold_group(2);
    s.term = leader_term(5);
    s.term_settled = term_settled;
    s.settled_seq = upload_seq(settled_seq);
    s.indexed = [this](std::string_view k) { return indexed.count(k) != 0; };
    s.in_snapshot = [this](std::string_view k) { return snapshot.count(k) != 0; };
    s.now_ms = now_ms;
    s.grace_ms = 1000;
    return s;
  }
};

TEST(orphan_sweep, deletes_only_what_nothing_can_name_and_only_after_the_grace_period) {
  names n;
  const std::string old_orphan = key(1, 2, 4, 7), indexed = key(1, 2, 4, 8), in_snapshot = key(1, 2, 3, 1),
                    current_settled = key(1, 2, 5, 0), current_pending = key(1, 2, 5, 3),
                    later = key(1, 2, 6, 0), other_group = key(1, 9, 1, 0), other_epoch = key(2, 2, 1, 0);
  n.indexed.insert(indexed);
  n.snapshot.insert(in_snapshot);
  std::vector<std::string> keys = {old_orphan, indexed,     in_snapshot, current_settled,   current_pending,
                                   later,      other_group, other_epoch, "notes/readme.txt"};
  auto listing = page_of(keys);
  orphan_sweep sw;
  // The leader has not applied an entry of its term yet: older terms may still commit.
  sw.begin_pass();
  EXPECT_TRUE(sw.consider(listing, n.state(0, false, 1)).empty());
  sw.end_pass();
  EXPECT_EQ(sw.candidates(), 1u);  // current_settled (seq 0 < settled 1)
  sw.begin_pass();
  EXPECT_TRUE(sw.consider(listing, n.state(500, true, 1)).empty());  // both candidates now, within grace
  sw.end_pass();
  EXPECT_EQ(sw.candidates(), 2u);
  sw.begin_pass();
  auto gone = sw.consider(listing, n.state(1200, true, 1));  // current_settled's grace is over
  sw.end_pass();
  EXPECT_EQ(gone, std::vector<std::string>{current_settled});
  std::erase(keys, current_settled);  // deleted: no longer listed
  listing = page_of(keys);
  sw.begin_pass();
  gone = sw.consider(listing, n.state(1600, true, 1));
  sw.end_pass();
  EXPECT_EQ(gone, std::vector<std::string>{old_orphan});
  EXPECT_EQ(sw.candidates(), 0u);
}

TEST(orphan_sweep, a_candidate_named_again_starts_over_and_unlisted_ones_are_forgotten) {
  names n;
  const std::string a = key(1, 2, 4, 1), b = key(1, 2, 4, 2);
  orphan_sweep sw;
  sw.begin_pass();
  EXPECT_TRUE(sw.consider(page_of({a, b}), n.state(0, true, 0)).empty());
  sw.end_pass();
  n.snapshot.insert(a);  // a restore snapshot taken meanwhile names it
  sw.begin_pass();
  EXPECT_TRUE(sw.consider(page_of({a}), n.state(2000, true, 0)).empty());  // b not listed: forgotten
  sw.end_pass();
  EXPECT_EQ(sw.candidates(), 0u);
  n.snapshot.clear();
  sw.begin_pass();
  EXPECT_TRUE(sw.consider(page_of({a, b}), n.state(3000, true, 0)).empty());  // both new again
  sw.end_pass();
  sw.begin_pass();
  EXPECT_EQ(sw.consider(page_of({a, b}), n.state(4000, true, 0)).size(), 2u);
  sw.end_pass();
}

TEST(orphan_sweep, an_unreported_upload_of_a_deposed_leader_is_removed_and_indexed_objects_stay) {
  raft::sim_scheduler sched(3);
  raft::sim_executor ex(sched);
  mem_object_store store;
  cold_index index;
  auto spans = [](std::string_view) -> std::optional<cold_index::stream_span> {
    return cold_index::stream_span{streams::stream_offset(0), streams::stream_offset(1'000'000)};
  };
  auto make = [&](std::uint64_t term) {
    uploader_options o;
    o.group = cold_group(2);
    o.term = leader_term(term);
    o.target_object_bytes = 100;
    return std::make_unique<uploader>(
        ex, o,
        [&](std::string k, shared_object_bytes b, uploader::put_done done) {
          auto r = store.put(k, *b);
          ex.post([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
        },
        [&](const uploaded_object& u) { EXPECT_TRUE(index.apply(u, spans).recorded); });
  };
  const std::vector<std::byte> bytes(100, std::byte{'x'});
  // Term 4: the first object is reported and indexed; the second lands, but its answer is lost and the
  // leader steps down before a retry could report it.
  auto up4 = make(4);
  up4->add("/s", streams::stream_offset(0), streams::stream_offset(100), bytes);
  sched.run_until(sched.now_ms() + 10);
  store.inject(injected_fault{store_op::put, fault_kind::timeout_after_apply, {}, ""});
  up4->add("/s", streams::stream_offset(100), streams::stream_offset(200), bytes);
  sched.run_until(sched.now_ms() + 10);
  up4->stop();
  ASSERT_EQ(store.keys().size(), 2u);
  // Term 5: the new leader uploads those bytes again (its own key) and sweeps.
  auto up5 = make(5);
  up5->add("/s", streams::stream_offset(100), streams::stream_offset(200), bytes);
  sched.run_until(sched.now_ms() + 10);
  EXPECT_EQ(index.cold_end("/s"), streams::stream_offset(200));
  std::set<std::string, std::less<>> named;
  for (std::uint64_t at : {0, 150}) {
    if (auto loc = index.find("/s", streams::stream_offset(at))) named.insert(loc->object->key);
  }
  orphan_sweep sw;
  sweep_state s;
  s.epoch = cold_epoch(1);
  s.group = cold_group(2);
  s.term = leader_term(5);
  s.term_settled = true;
  s.settled_seq = up5->next_seq();
  s.indexed = [&](std::string_view k) { return named.count(k) != 0; };
  s.in_snapshot = [](std::string_view) { return false; };
  s.grace_ms = 1000;
  std::vector<std::string> deleted;
  for (std::int64_t now : {0, 2000}) {
    s.now_ms = now;
    sw.begin_pass();
    for (const auto& k : sw.consider(*store.list(group_key_prefix(cold_epoch(1), cold_group(2)), ""), s)) {
      ASSERT_TRUE(store.remove(k));
      deleted.push_back(k);
    }
    sw.end_pass();
  }
  EXPECT_EQ(deleted, std::vector<std::string>{key(1, 2, 4, 1)});
  EXPECT_EQ(store.keys().size(), 2u);
  EXPECT_TRUE(store.contents(key(1, 2, 4, 0)));
  EXPECT_TRUE(store.contents(key(1, 2, 5, 0)));
}

}  // namespace
}  // namespace weir::tier
