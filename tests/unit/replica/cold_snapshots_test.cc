// A single node shard's restore snapshots built directly (replica::cold_snapshots over a partition on its
// own loop, the in-memory object store): a snapshot restores a fresh state with every byte (the bytes in
// objects through the index, the others inlined), older snapshots beyond the kept ones are deleted, the
// sweep is told which objects kept snapshots name, an unchanged log uploads nothing new, a snapshot
// larger than one PUT goes up in parts (its head last; an upload cut short leaves no head, and its parts
// go with the next prune), and one larger than the largest taken waits.
#include "replica/cold_snapshots.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "replica/cold_mover.h"
#include "replica/cold_state.h"
#include "tier/mem_object_store.h"
#include "tier/restore_snapshot.h"
#include "unit/replica/partition_on_loop.h"
#include "unit/streams/command_builders.h"

namespace weir::replica {
namespace {

using streams::testing::make_append;
using streams::testing::make_create;
using testing::quiet_host;

class cold_snapshots_test : public testing::partition_on_loop {
 protected:
  void SetUp() override { open(); }

  void open(std::uint64_t max_bytes = max_restore_snapshot_bytes,
            std::uint64_t part_bytes = tier::object_store::max_object_bytes) {
    partition_options po;
    po.hot_bytes = 64;  // records leave memory at once: a snapshot reads them back from the segments
    wal_options wo;
    wo.data_dir = "/data";
    wo.sync = storage::sync_policy{};
    ASSERT_TRUE(open_partition(host_, po, wo, [&, max_bytes, part_bytes] {
      raft::executor* ex = ex_.get();
      // Every store call answers on the loop's next turn, as the workers post their completions.
      auto put = [this, ex](std::string key, tier::shared_object_bytes bytes, tier::uploader::put_done done) {
        auto r = store_.put(key, *bytes);
        ex->post([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
      };
      cold_mover_options o;
      o.upload.term = tier::leader_term(1);
      o.upload.max_age = std::chrono::hours(1);
      o.scan_interval = std::chrono::hours(1);
      part_->attach_cold(o, put, 0);
      cold_snapshot_options so;
      so.term = tier::leader_term(1);
      so.interval = std::chrono::hours(1);  // snapshots are taken when a test asks
      so.max_bytes = max_bytes;
      so.part_bytes = part_bytes;
      cold_snapshot_io io;
      io.off_loop = [ex](std::function<cold_snapshot_io::built()> job,
                         std::function<void(cold_snapshot_io::built)> done) {
        ex->post([job = std::move(job), done = std::move(done)] { done(job()); });
      };
      io.put = put;
      io.list = [this, ex](std::string prefix, std::string token, int max_keys,
                           cold_sweeper_options::list_done done) {
        auto r = store_.list(prefix, token, max_keys);
        ex->post([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
      };
      io.remove = [this, ex](std::string key, cold_sweeper_options::remove_done done) {
        auto r = store_.remove(key);
        ex->post([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
      };
      part_->attach_cold_snapshots(so, std::move(io));
      part_->start_cold();
    }));
  }
  // The mover's pass (reading records that left memory takes loop turns), its object sent and recorded
  // in the index, durable.
  void upload_now() {
    on_loop([&] {
      part_->mover()->pass();
      return 0;
    });
    settle();
    on_loop([&] {
      part_->mover()->flush();
      return 0;
    });
    settle();
  }
  // Lets the loop run what the store's answers and the log's completions posted.
  void settle() {
    for (int i = 0; i < 20; ++i) ASSERT_EQ(submit(streams::expire_command{"/none", 0}).failure, errc::ok);
  }
  // Takes a snapshot and lets it land (and the older ones go). The cut's records are encoded on the
  // checkpointer's thread, so the snapshot is built after a number of loop turns that the test cannot
  // know: it waits (10 s at most) until the snapshot is no longer under way.
  void snapshot_now() {
    on_loop([&] {
      part_->snapshots()->take();
      return 0;
    });
    for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
         on_loop([&] { return part_->snapshots()->busy(); }) && std::chrono::steady_clock::now() < end;) {
      settle();
    }
    settle();
  }
  cold_snapshot_stats stats() {
    return on_loop([&] { return part_->snapshots()->stats(); });
  }
  std::vector<std::string> snapshot_keys() {
    std::vector<std::string> out;
    for (const auto& k : store_.keys()) {
      if (tier::parse_snapshot_key(k)) out.push_back(k);
    }
    return out;
  }
  std::vector<std::string> part_keys() {
    std::vector<std::string> out;
    for (const auto& k : store_.keys()) {
      if (tier::parse_snapshot_part_key(k)) out.push_back(k);
    }
    return out;
  }
  // The snapshot under `key` as one object, its parts joined.
  tier::object_bytes whole_snapshot(const std::string& key) {
    auto joined = tier::read_restore_snapshot(store_, key);
    EXPECT_TRUE(joined) << joined.err().reason;
    return joined ? *joined : tier::object_bytes{};
  }
  // Every byte of `path` from `from` in a restored state machine (its held records only).
  static std::string held_bytes(const streams::state_machine& sm, const std::string& path,
                                streams::stream_offset from) {
    auto log = sm.log_of(path);
    if (!log) return "<no stream>";
    streams::read_plan plan = log->read(from, 1 << 20, false);
    std::string out;
    for (const auto& s : plan.slices) out += s.cold() ? std::string("<on disk>") : std::string(s.view());
    return out;
  }

  tier::mem_object_store store_;
  quiet_host host_;
};

TEST_F(cold_snapshots_test, a_snapshot_restores_a_fresh_state_with_the_bytes_not_in_objects_inlined) {
  ASSERT_EQ(submit(make_create("/a", "application/octet-stream")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/a", "in-an-object;")).failure, errc::ok);
  ASSERT_EQ(submit(make_create("/j", "application/json")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/j", "1,", 1)).failure, errc::ok);
  upload_now();
  ASSERT_EQ(submit(make_append("/a", "only-local")).failure, errc::ok);
  snapshot_now();
  ASSERT_EQ(stats().uploaded, 1u) << stats().last_error;
  auto keys = snapshot_keys();
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0], "e0001/snap/g00000000/t0000000000000001-s0000000000000000.snap");

  auto object = store_.get_range(keys[0], 0, 0);
  ASSERT_TRUE(object);
  auto v = tier::decode_restore_snapshot(object->bytes);
  ASSERT_TRUE(v) << v.err().reason;
  EXPECT_EQ(v->header.groups, 1u);
  EXPECT_EQ(v->header.lsn, stats().last_lsn);
  streams::state_machine sm;
  tier::cold_index index;
  ASSERT_TRUE(restore_checkpoint(v->state, sm, index));
  // The bytes in the object are forgotten (the index has them), the rest is inlined.
  EXPECT_EQ(index.cold_end("/a"), streams::stream_offset(13));
  EXPECT_EQ(sm.log_of("/a")->held_from(), streams::stream_offset(13));
  EXPECT_EQ(held_bytes(sm, "/a", streams::stream_offset(13)), "only-local");
  // A JSON stream's too (its reads from objects end at message boundaries).
  EXPECT_EQ(index.cold_end("/j"), streams::stream_offset(2));
  EXPECT_EQ(sm.log_of("/j")->held_from(), streams::stream_offset(2));
  EXPECT_EQ(held_bytes(sm, "/j", streams::stream_offset(2)), "");
  // Nothing refers to this node's disk: an empty data directory can hold it.
  EXPECT_TRUE(sm.referenced_segments(0).empty());
  EXPECT_EQ(index, on_loop([&] { return part_->cold_index(); }));
}

TEST_F(cold_snapshots_test, older_snapshots_go_and_the_sweep_keeps_what_the_kept_ones_name) {
  ASSERT_EQ(submit(make_create("/a", "application/octet-stream")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/a", "first")).failure, errc::ok);
  upload_now();
  std::vector<std::string> objects = store_.keys();
  ASSERT_EQ(objects.size(), 1u);
  const std::string first_object = objects[0];
  // Before this run's snapshots are the only ones kept, an older run's may name anything.
  EXPECT_TRUE(on_loop([&] { return part_->snapshots()->names("e0001/g00000000/anything.obj"); }));
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(submit(make_append("/a", "more")).failure, errc::ok);
    snapshot_now();
  }
  EXPECT_EQ(stats().uploaded, 3u);
  EXPECT_EQ(stats().deleted, 2u);
  auto keys = snapshot_keys();
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_NE(keys[0].find("-s0000000000000002.snap"), std::string::npos) << keys[0];
  EXPECT_TRUE(on_loop([&] { return part_->snapshots()->names(first_object); }));
  EXPECT_FALSE(on_loop([&] { return part_->snapshots()->names("e0001/g00000000/anything.obj"); }));
  // The stream is deleted: the live index drops the object, the kept snapshot still names it.
  ASSERT_EQ(submit(streams::delete_command{"/a"}).failure, errc::ok);
  EXPECT_FALSE(on_loop([&] { return part_->cold_index().names(first_object); }));
  EXPECT_TRUE(on_loop([&] { return part_->snapshots()->names(first_object); }));
  // The next snapshot (the delete grew the log) no longer names it, and the one before is gone.
  snapshot_now();
  EXPECT_FALSE(on_loop([&] { return part_->snapshots()->names(first_object); }));
  EXPECT_EQ(snapshot_keys().size(), 1u);
}

TEST_F(cold_snapshots_test, an_unchanged_log_uploads_no_new_snapshot) {
  ASSERT_EQ(submit(make_create("/a")).failure, errc::ok);
  snapshot_now();
  snapshot_now();
  EXPECT_EQ(stats().uploaded, 1u);
  ASSERT_EQ(submit(make_append("/a", "x")).failure, errc::ok);
  snapshot_now();
  EXPECT_EQ(stats().uploaded, 2u);
}

TEST_F(cold_snapshots_test, a_snapshot_larger_than_one_put_goes_up_in_parts_its_head_last) {
  close();
  open(max_restore_snapshot_bytes, /*part_bytes=*/1024);
  ASSERT_EQ(submit(make_create("/a", "application/octet-stream")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/a", "in-an-object;")).failure, errc::ok);
  upload_now();
  std::string local;
  for (int i = 0; i < 100; ++i) local += "local record " + std::to_string(i) + ";";
  ASSERT_EQ(submit(make_append("/a", local)).failure, errc::ok);
  snapshot_now();
  ASSERT_EQ(stats().uploaded, 1u) << stats().last_error;
  EXPECT_GE(stats().last_parts, 2u);
  auto heads = snapshot_keys();
  ASSERT_EQ(heads.size(), 1u);
  EXPECT_EQ(part_keys().size(), stats().last_parts);
  for (const std::string& k : store_.keys()) EXPECT_LE(store_.contents(k)->size(), 1024u) << k;
  // Joined, it restores as a snapshot of one object does.
  const tier::object_bytes whole = whole_snapshot(heads[0]);
  auto v = tier::decode_restore_snapshot(whole);
  ASSERT_TRUE(v) << v.err().reason;
  streams::state_machine sm;
  tier::cold_index index;
  ASSERT_TRUE(restore_checkpoint(v->state, sm, index));
  EXPECT_EQ(index.cold_end("/a"), streams::stream_offset(13));
  EXPECT_EQ(held_bytes(sm, "/a", streams::stream_offset(13)), local);

  // The next snapshot's second part fails: no head of it lands, and the one before stays the newest.
  ASSERT_EQ(submit(make_append("/a", "x")).failure, errc::ok);
  const tier::object_name second{tier::cold_epoch(1), tier::cold_group(0), tier::leader_term(1),
                                 tier::upload_seq(1)};
  tier::injected_fault f;
  f.op = tier::store_op::put;
  f.error = tier::make_store_error(tier::store_errc::server_error, "injected", 500);
  f.key_prefix = tier::snapshot_part_key(second, 1);
  store_.inject(f, 1);
  snapshot_now();
  EXPECT_EQ(stats().uploaded, 1u);
  EXPECT_NE(stats().last_error.find(f.key_prefix), std::string::npos) << stats().last_error;
  EXPECT_EQ(snapshot_keys(), heads);
  EXPECT_TRUE(store_.contents(tier::snapshot_part_key(second, 0)));  // left behind
  // The one after lands, and the prune takes the older head and every part but its own.
  snapshot_now();
  ASSERT_EQ(stats().uploaded, 2u) << stats().last_error;
  heads = snapshot_keys();
  ASSERT_EQ(heads.size(), 1u);
  const tier::object_name third = *tier::parse_snapshot_key(heads[0]);
  EXPECT_EQ(third.seq, tier::upload_seq(2));
  for (const std::string& k : part_keys()) EXPECT_EQ(tier::parse_snapshot_part_key(k)->snapshot, third) << k;
  EXPECT_EQ(part_keys().size(), stats().last_parts);
  const tier::object_bytes latest_whole = whole_snapshot(heads[0]);  // the view below points into it
  auto latest = tier::decode_restore_snapshot(latest_whole);
  ASSERT_TRUE(latest) << latest.err().reason;
  streams::state_machine sm3;
  tier::cold_index index3;
  ASSERT_TRUE(restore_checkpoint(latest->state, sm3, index3));
  EXPECT_EQ(held_bytes(sm3, "/a", streams::stream_offset(13)), local + "x");
}

TEST(snapshot_pruning, older_heads_and_older_snapshots_parts_go_newer_parts_stay) {
  auto name = [](std::uint64_t term, std::uint64_t seq) {
    return tier::object_name{tier::cold_epoch(1), tier::cold_group(2), tier::leader_term(term),
                             tier::upload_seq(seq)};
  };
  const std::vector<std::string> keys = {
      tier::snapshot_part_key(name(3, 0), 1),  // a newer leader's upload under way
      tier::snapshot_key(name(2, 5)),         tier::snapshot_part_key(name(2, 5), 0),
      tier::snapshot_key(name(1, 9)),         tier::snapshot_part_key(name(1, 9), 0),
      tier::snapshot_part_key(name(2, 4), 0),  // an upload cut short
      tier::snapshot_key(name(2, 1)),         "e0001/snap/g00000002/notes.txt",
  };
  snapshot_pruning one = prune_snapshot_keys(keys, 1);
  EXPECT_EQ(one.kept, std::vector<std::string>{tier::snapshot_key(name(2, 5))});
  std::vector<std::string> drop = one.drop;
  std::sort(drop.begin(), drop.end());
  std::vector<std::string> want = {tier::snapshot_key(name(1, 9)), tier::snapshot_part_key(name(1, 9), 0),
                                   tier::snapshot_part_key(name(2, 4), 0), tier::snapshot_key(name(2, 1))};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(drop, want);
  // Keeping two: the older kept one's parts stay too.
  snapshot_pruning two = prune_snapshot_keys(keys, 2);
  EXPECT_EQ(two.kept,
            (std::vector<std::string>{tier::snapshot_key(name(2, 1)), tier::snapshot_key(name(2, 5))}));
  drop = two.drop;
  std::sort(drop.begin(), drop.end());
  want = {tier::snapshot_key(name(1, 9)), tier::snapshot_part_key(name(1, 9), 0)};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(drop, want);
  // No head: nothing goes.
  EXPECT_TRUE(prune_snapshot_keys({tier::snapshot_part_key(name(1, 0), 0)}, 1).drop.empty());
}

// The build stops reading records once they pass the largest snapshot (a cluster group's build has no
// count of its bytes not in objects before it starts).
TEST(cut_inlining, a_bounded_reader_gives_up_past_its_bytes) {
  cut_inlining in;  // no segment readers: a read below the bound fails as a missing segment
  auto read = in.bounded_reader(10);
  streams::part_reference r;
  r.size = 6;
  auto first = read(r);
  ASSERT_FALSE(first);
  EXPECT_FALSE(first.err().is<errc>() && first.err().code == static_cast<int>(errc::cold_backlogged))
      << first.err().reason;
  auto second = read(r);  // 12 bytes
  ASSERT_FALSE(second);
  EXPECT_TRUE(second.err().is<errc>() && second.err().code == static_cast<int>(errc::cold_backlogged))
      << second.err().reason;
  EXPECT_NE(second.err().reason.find("too large"), std::string::npos) << second.err().reason;
  // Each reader counts its own build.
  auto again = in.bounded_reader(10)(r);
  EXPECT_FALSE(again.err().is<errc>() && again.err().code == static_cast<int>(errc::cold_backlogged));
}

TEST_F(cold_snapshots_test, a_snapshot_larger_than_the_largest_taken_waits_for_the_uploads) {
  close();
  open(/*max_bytes=*/1024);
  ASSERT_EQ(submit(make_create("/a", "application/octet-stream")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/a", std::string(4096, 'x'))).failure, errc::ok);
  snapshot_now();
  EXPECT_EQ(stats().uploaded, 0u);
  EXPECT_EQ(stats().too_large, 1u);
  EXPECT_NE(stats().last_error.find("too large"), std::string::npos) << stats().last_error;
  EXPECT_TRUE(snapshot_keys().empty());
  // Once the bytes are in an object they are forgotten in the snapshot, which then fits.
  upload_now();
  snapshot_now();
  EXPECT_EQ(stats().uploaded, 1u) << stats().last_error;
  EXPECT_TRUE(stats().last_error.empty());
}

}  // namespace
}  // namespace weir::replica
