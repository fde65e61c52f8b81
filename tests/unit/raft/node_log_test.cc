// node_log (node_log.h): group commit across groups, recovery of every group's state, crash loss of
// unsynced batches, torn tails.
#include "raft/node_log.h"
#include "support/sim/delayed_flusher.h"

#include <gtest/gtest.h>

#include "storage/mem_env.h"
#include "support/sim/sim_scheduler.h"

namespace weir::raft {
namespace {

using std::chrono::milliseconds;

std::vector<std::byte> bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span<const char>(s.data(), s.size()));
  return {b.begin(), b.end()};
}

std::string text(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

struct fixture {
  storage::mem_env env;
  sim_scheduler sched{1};
  std::unique_ptr<sim_executor> ex = std::make_unique<sim_executor>(sched);
  std::unique_ptr<delayed_flusher> flusher =
      std::make_unique<delayed_flusher>(*ex, [] { return milliseconds(5); });
  std::vector<std::pair<std::uint64_t, bool>> synced;

  std::unique_ptr<node_log> open() {
    auto l = node_log::open(env, *flusher, "/data/raft.log");
    EXPECT_TRUE(l.has_value()) << l.err().reason;
    auto log = std::move(l).value();
    log->set_on_synced([this](std::uint64_t b, status st) { synced.emplace_back(b, st.has_value()); });
    return log;
  }
  // The node died: its tasks never run; a new executor for the next incarnation.
  void crash(std::optional<std::uint64_t> torn = std::nullopt) {
    env.crash(torn);
    ex->halt();
    env.restart();
    ex = std::make_unique<sim_executor>(sched);
    flusher = std::make_unique<delayed_flusher>(*ex, [] { return milliseconds(5); });
  }
};

record::log_record entries_of(std::uint32_t g, std::uint64_t first, std::uint64_t term,
                              const std::vector<std::byte>& data, int n = 1) {
  record::entries e{log_index(first), {}};
  for (int i = 0; i < n; ++i) e.items.push_back(wire::entry{term_id(term), 1, data});
  return record::log_record{group_id(g), std::move(e)};
}

TEST(raft_node_log, records_of_many_groups_share_one_batch_and_one_sync) {
  fixture f;
  auto log = f.open();
  const auto syncs = f.env.sync_count();
  const auto d = bytes_of("x");
  for (std::uint32_t g = 0; g < 16; ++g) {
    EXPECT_EQ(log->add(record::log_record{group_id(g), record::term{term_id(2)}}), 1u);
    EXPECT_EQ(log->add(record::log_record{group_id(g), record::vote{node_id(1)}}), 1u);
    EXPECT_EQ(log->add(entries_of(g, 1, 2, d)), 1u);
  }
  log->flush();
  EXPECT_TRUE(log->flushing());
  // Records added while batch 1 is being synced form batch 2.
  EXPECT_EQ(log->add(entries_of(0, 2, 2, d)), 2u);
  log->flush();  // no second flush while one runs
  f.sched.run_until(4);
  EXPECT_TRUE(f.synced.empty());
  f.sched.run_until(5);
  ASSERT_EQ(f.synced.size(), 1u);
  EXPECT_EQ(f.synced[0], std::make_pair(std::uint64_t{1}, true));
  EXPECT_EQ(f.env.sync_count() - syncs, 1u);
  // Batch 2 started when batch 1 completed.
  f.sched.run_until(10);
  ASSERT_EQ(f.synced.size(), 2u);
  EXPECT_EQ(f.synced[1], std::make_pair(std::uint64_t{2}, true));
  EXPECT_EQ(log->synced_batch(), 2u);
}

TEST(raft_node_log, a_full_batch_is_sealed_and_the_ones_after_it_are_synced_in_order) {
  fixture f;
  auto l = node_log::open(f.env, *f.flusher, "/data/raft.log", node_log_options{64u << 20, 100});
  ASSERT_TRUE(l.has_value());
  auto log = std::move(l).value();
  log->set_on_synced([&](std::uint64_t b, status st) { f.synced.emplace_back(b, st.has_value()); });
  const auto d = bytes_of(std::string(40, 'x'));
  EXPECT_EQ(log->add(entries_of(0, 1, 1, d)), 1u);
  log->flush();
  // While batch 1 syncs, records pile up: a batch takes records until it holds 100 bytes (the record
  // that crosses the bound included), then the next begins.
  std::vector<std::uint64_t> batch_of;
  for (std::uint64_t i = 2; i < 12; ++i) batch_of.push_back(log->add(entries_of(0, i, 1, d)));
  EXPECT_EQ(batch_of.front(), 2u);
  EXPECT_GT(batch_of.back(), 3u);
  EXPECT_TRUE(std::is_sorted(batch_of.begin(), batch_of.end()));
  EXPECT_TRUE(log->has_pending());
  const auto syncs = f.env.sync_count();
  for (int i = 0; i < 100 && (log->flushing() || log->has_pending()); ++i) {
    f.sched.run_until(f.sched.now_ms() + 5);
    log->flush();
  }
  // One sync per batch, in batch order, none skipped.
  ASSERT_EQ(f.synced.size(), batch_of.back());
  for (std::size_t i = 0; i < f.synced.size(); ++i) EXPECT_EQ(f.synced[i], std::make_pair(i + 1, true));
  EXPECT_EQ(f.env.sync_count() - syncs, batch_of.back());
  log.reset();
  // Every entry is there after a reopen.
  auto again = f.open();
  const group_state s = again->take_group_state(group_id(0));
  ASSERT_EQ(s.entries.size(), 11u);
}

TEST(raft_node_log, reopening_rebuilds_every_groups_state) {
  fixture f;
  {
    auto log = f.open();
    log->add(record::log_record{group_id(1), record::term{term_id(1)}});
    log->add(entries_of(1, 1, 1, bytes_of("a"), 5));  // 1..5
    log->add(record::log_record{group_id(1), record::term{term_id(3)}});
    log->add(record::log_record{group_id(1), record::vote{node_id(2)}});
    log->add(record::log_record{group_id(1), record::truncate{log_index(4)}});  // 1..3
    log->add(entries_of(1, 4, 3, bytes_of("b"), 2));                            // 1..5, 4 and 5 are "b"
    log->add(record::log_record{group_id(2), record::term{term_id(7)}});
    log->add(entries_of(2, 1, 7, bytes_of("c"), 10));
    const auto state = bytes_of("state");  // records are views: the bytes must outlive add()
    const auto fresh = bytes_of("new");
    record::snapshot s{log_index(8), term_id(7), log_index(1), {wire::server{node_id(1), 1, "n1"}}, 3, state};
    log->add(record::log_record{group_id(2), s});  // keeps 6..10
    record::snapshot installed{log_index(20), term_id(8), log_index(1), {}, 0, fresh};
    log->add(record::log_record{group_id(3), installed});
    log->add(entries_of(3, 21, 8, bytes_of("d"), 2));
    log->flush();
    f.sched.run_until(100);
  }
  auto log = f.open();
  group_state g1 = log->take_group_state(group_id(1));
  EXPECT_EQ(g1.term, term_id(3));
  EXPECT_EQ(g1.vote, node_id(2));
  EXPECT_EQ(g1.start, log_index(1));
  ASSERT_EQ(g1.entries.size(), 5u);
  EXPECT_EQ(text(g1.entries[2].data), "a");
  EXPECT_EQ(text(g1.entries[3].data), "b");
  EXPECT_EQ(g1.entries[4].term, term_id(3));

  group_state g2 = log->take_group_state(group_id(2));
  EXPECT_EQ(g2.term, term_id(7));
  EXPECT_EQ(g2.vote, node_id(0));
  ASSERT_TRUE(g2.snapshot.has_value());
  EXPECT_EQ(g2.snapshot->index, log_index(8));
  EXPECT_EQ(text(g2.snapshot->data), "state");
  EXPECT_EQ(g2.start, log_index(6));
  EXPECT_EQ(g2.entries.size(), 5u);

  group_state g3 = log->take_group_state(group_id(3));
  EXPECT_EQ(g3.start, log_index(21));
  EXPECT_EQ(g3.entries.size(), 2u);
  EXPECT_EQ(g3.next_index(), log_index(23));

  // Taken once: a second take gives an empty state.
  EXPECT_TRUE(log->take_group_state(group_id(1)).entries.empty());
  EXPECT_EQ(log->take_group_state(group_id(9)).next_index(), log_index(1));
}

TEST(raft_node_log, a_crash_loses_exactly_the_unsynced_batches) {
  fixture f;
  {
    auto log = f.open();
    log->add(entries_of(0, 1, 1, bytes_of("kept")));
    log->flush();
    f.sched.run_until(5);
    ASSERT_EQ(f.synced.size(), 1u);
    log->add(entries_of(0, 2, 1, bytes_of("lost")));
    log->add(record::log_record{group_id(0), record::term{term_id(5)}});
    log->flush();
    f.sched.run_until(7);  // written, not yet synced
    ASSERT_EQ(f.synced.size(), 1u);
    f.crash();
  }
  f.sched.run_until(100);
  auto log = f.open();
  group_state g = log->take_group_state(group_id(0));
  ASSERT_EQ(g.entries.size(), 1u);
  EXPECT_EQ(text(g.entries[0].data), "kept");
  EXPECT_EQ(g.term, term_id(0));
}

TEST(raft_node_log, a_torn_tail_is_cut_and_the_log_goes_on) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    fixture f;
    {
      auto log = f.open();
      log->add(entries_of(0, 1, 1, bytes_of("synced"), 3));
      log->flush();
      f.sched.run_until(5);
      log->add(entries_of(0, 4, 1, std::vector<std::byte>(300, std::byte{7}), 4));
      log->flush();
      f.crash(seed);
    }
    std::size_t kept = 0;
    {
      auto log = f.open();
      group_state g = log->take_group_state(group_id(0));
      ASSERT_TRUE(g.entries.size() == 3 || g.entries.size() == 7)
          << "seed " << seed << ": " << g.entries.size();
      kept = g.entries.size();
      log->add(entries_of(0, kept + 1, 2, bytes_of("after")));
      log->flush();
      f.sched.run_until(f.sched.now_ms() + 10);
    }
    auto log = f.open();
    group_state g = log->take_group_state(group_id(0));
    ASSERT_EQ(g.entries.size(), kept + 1) << "seed " << seed;
    EXPECT_EQ(text(g.entries.back().data), "after");
  }
}

TEST(raft_node_log, a_gap_in_a_groups_entries_is_corruption) {
  fixture f;
  {
    auto log = f.open();
    log->add(entries_of(0, 1, 1, bytes_of("a")));
    log->add(entries_of(0, 3, 1, bytes_of("b")));
    log->flush();
    f.sched.run_until(10);
  }
  auto l = node_log::open(f.env, *f.flusher, "/data/raft.log");
  ASSERT_FALSE(l.has_value());
  EXPECT_EQ(l.err().as<errc>(), errc::corruption);
  EXPECT_NE(l.err().reason.find("group 0"), std::string::npos) << l.err().reason;
}

}  // namespace
}  // namespace weir::raft
