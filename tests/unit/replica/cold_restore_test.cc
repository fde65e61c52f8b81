// Restores from the bucket, built directly over the in-memory object store and file system: the newest
// epoch with a snapshot of every group is used (an incomplete newer one is passed over), the restored node
// uploads under an epoch above all of them, damage is refused by name, a directory with a log is
// refused, and an interrupted restore is never opened as data.
#include "replica/cold_restore.h"

#include <gtest/gtest.h>

#include "base/clock.h"
#include "raft/loop_executor.h"
#include "replica/partition.h"
#include "replica/wal_recovery.h"
#include "storage/mem_env.h"
#include "tier/mem_object_store.h"

namespace weir::replica {
namespace {

tier::object_bytes bytes_of(const std::string& s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return tier::object_bytes(p, p + s.size());
}

// A snapshot of `group` (of `groups`) in `epoch`, by a leader of `term`, holding `state`, in objects of at
// most `max_object` bytes (its parts first, then its head).
void put_snapshot(tier::mem_object_store& store, std::uint16_t epoch, std::uint32_t group,
                  std::uint32_t groups, std::uint64_t term, std::uint64_t seq, const std::string& state,
                  std::uint64_t max_object = tier::object_store::max_object_bytes) {
  tier::restore_snapshot_header h{tier::cold_epoch(epoch), tier::cold_group(group), groups, 100 + seq,
                                  1'700'000'000'000 + static_cast<std::int64_t>(seq)};
  const tier::object_name name{tier::cold_epoch(epoch), tier::cold_group(group), tier::leader_term(term),
                               tier::upload_seq(seq)};
  auto objects = tier::encode_restore_snapshot_objects(h, bytes_of(state), max_object);
  for (std::uint32_t i = 0; i < objects.parts.size(); ++i) {
    ASSERT_TRUE(store.put(tier::snapshot_part_key(name, i), objects.parts[i]));
  }
  ASSERT_TRUE(store.put(tier::snapshot_key(name), objects.head));
}

std::string state_of(const restore_point::group& g) {
  return std::string(reinterpret_cast<const char*>(g.state().data()), g.state().size());
}

TEST(cold_restore, the_newest_complete_epoch_and_each_groups_newest_snapshot_are_used) {
  tier::mem_object_store store;
  put_snapshot(store, 1, 0, 2, 1, 0, "e1 g0 old");
  put_snapshot(store, 1, 0, 2, 2, 0, "e1 g0 new");  // a later term sorts after
  put_snapshot(store, 1, 1, 2, 1, 7, "e1 g1");
  put_snapshot(store, 2, 0, 2, 1, 0, "e2 g0 only");  // epoch 2 lacks group 1
  auto p = find_restore_point(store);
  ASSERT_TRUE(p) << p.err().reason;
  EXPECT_EQ(p->epoch, tier::cold_epoch(1));
  EXPECT_EQ(p->next_epoch, tier::cold_epoch(3));  // above every epoch in the bucket
  ASSERT_EQ(p->groups.size(), 2u);
  EXPECT_EQ(state_of(p->groups[0]), "e1 g0 new");
  EXPECT_EQ(state_of(p->groups[1]), "e1 g1");
  EXPECT_EQ(p->taken_at_ms(), 1'700'000'000'000);  // the oldest of the two
}

TEST(cold_restore, an_empty_bucket_an_incomplete_set_and_damage_are_refused) {
  tier::mem_object_store store;
  auto none = find_restore_point(store);
  ASSERT_FALSE(none);
  EXPECT_NE(none.err().reason.find("nothing of weir's"), std::string::npos) << none.err().reason;

  put_snapshot(store, 1, 1, 2, 1, 0, "group 1 of 2 only");
  auto incomplete = find_restore_point(store);
  ASSERT_FALSE(incomplete);
  EXPECT_NE(incomplete.err().reason.find("snapshots of 1 of 2 groups"), std::string::npos)
      << incomplete.err().reason;

  put_snapshot(store, 1, 0, 2, 1, 0, "group 0");
  const std::string damaged = "e0001/snap/g00000000/t0000000000000001-s0000000000000000.snap";
  auto object = store.get_range(damaged, 0, 0);
  ASSERT_TRUE(object);
  object->bytes.back() ^= std::byte{1};
  store.set_contents(damaged, object->bytes);
  auto refused = find_restore_point(store);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.err().reason.find(damaged), std::string::npos) << refused.err().reason;
}

TEST(cold_restore, a_snapshot_in_parts_is_read_whole_and_a_missing_part_is_named) {
  tier::mem_object_store store;
  std::string big;
  for (int i = 0; i < 40; ++i) big += "group 0's state, line " + std::to_string(i) + "\n";
  put_snapshot(store, 1, 0, 2, 1, 0, big, 256);
  put_snapshot(store, 1, 1, 2, 1, 0, "group 1 in one object", 256);
  EXPECT_GT(store.keys().size(), 5u);  // parts of group 0
  auto p = find_restore_point(store);
  ASSERT_TRUE(p) << p.err().reason;
  ASSERT_EQ(p->groups.size(), 2u);
  EXPECT_EQ(state_of(p->groups[0]), big);
  EXPECT_EQ(p->groups[0].header.lsn, 100u);
  EXPECT_EQ(state_of(p->groups[1]), "group 1 in one object");

  const std::string lost = "e0001/snap/g00000000/t0000000000000001-s0000000000000000.part00000002";
  ASSERT_TRUE(store.remove(lost));
  auto refused = find_restore_point(store);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.err().reason.find(lost), std::string::npos) << refused.err().reason;
  // A part of another snapshot in its place.
  put_snapshot(store, 1, 0, 2, 1, 5, "~" + big, 256);
  ASSERT_TRUE(store.put(
      lost, *store.contents("e0001/snap/g00000000/t0000000000000001-s0000000000000005.part00000002")));
  ASSERT_TRUE(store.remove("e0001/snap/g00000000/t0000000000000001-s0000000000000005.snap"));
  refused = find_restore_point(store);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.err().reason.find("part 2"), std::string::npos) << refused.err().reason;
}

struct quiet_host final : partition_host {
  void on_durable(const streams::outcome&) override {}
  void on_rebuilt() override {}
  void on_writes_resumed() override {}
};

TEST(cold_restore, the_logs_are_written_once_into_an_empty_directory_and_an_interrupted_one_is_refused) {
  tier::mem_object_store store;
  put_snapshot(store, 1, 0, 1, 1, 0, "state");
  auto p = find_restore_point(store);
  ASSERT_TRUE(p) << p.err().reason;
  storage::mem_env env;
  ASSERT_TRUE(write_restored_logs(env, "/data", *p));
  EXPECT_TRUE(env.file_exists("/data/wal/cores"));
  EXPECT_FALSE(env.file_exists(std::string("/data/wal/") + restoring_marker));
  auto epoch = read_cold_epoch(env, "/data");
  ASSERT_TRUE(epoch);
  EXPECT_EQ(*epoch, tier::cold_epoch(2));
  // A second restore into the same directory is refused: it holds a log now.
  auto again = write_restored_logs(env, "/data", *p);
  ASSERT_FALSE(again);
  EXPECT_NE(again.err().reason.find("empty data directory"), std::string::npos) << again.err().reason;
  // A directory never restored uploads under epoch 1.
  EXPECT_EQ(*read_cold_epoch(env, "/other"), tier::cold_epoch(1));

  // A restore that stopped half way (the marker still there) is not opened as data.
  ASSERT_TRUE(env.create_dirs("/half/wal"));
  ASSERT_TRUE(storage::replace_file(env, std::string("/half/wal/") + restoring_marker,
                                    std::as_bytes(std::span("x", 1))));
  io::event_loop loop(0);
  raft::loop_executor ex(loop);
  manual_clock clock;
  quiet_host host;
  partition part(ex, clock, partition_options{}, host);
  wal_options wo;
  wo.data_dir = "/half";
  segment_readers readers;
  auto opened = open_durable_store(env, wo, {&part}, readers);
  ASSERT_FALSE(opened);
  EXPECT_NE(opened.err().reason.find("did not finish"), std::string::npos) << opened.err().reason;
}

}  // namespace
}  // namespace weir::replica
