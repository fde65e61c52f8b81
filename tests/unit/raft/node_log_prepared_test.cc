// node_log prepared segments (node_log_options::prepare_segments; docs/replication-formats.md, "Node log
// format"): rolls onto a spare of zeros written ahead, early when a batch would not fit in the zeros; the
// segment left and a cleanly closed log hold no zeros; after a crash the zeros past the last record are cut
// without being called a torn tail, and every synced batch is kept; a last segment of zeros (a roll cut
// short) is removed; compaction and segment deletion work as before.
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>

#include <unistd.h>

#include "raft/node_log.h"
#include "raft/thread_flusher.h"
#include "storage/mem_env.h"
#include "support/sim/delayed_flusher.h"
#include "support/sim/sim_scheduler.h"
#include "unit/raft/node_log_test_util.h"
#include "unit/raft/posted_loop.h"

namespace weir::raft {
namespace {

using std::chrono::milliseconds;

const std::string dir = "/data/raft";  // test_support::log_path's directory

using test_support::bytes_of;
using test_support::log_path;
using test_support::seg;
using test_support::text;

node_log_options prepared(std::uint64_t segment_bytes = 64u << 10, std::uint64_t first = 8192) {
  node_log_options o;
  o.segment_bytes = segment_bytes;
  o.prepare_segments = true;
  o.prepared_first_bytes = first;
  o.prepared_bytes_per_second = 0;  // unpaced: the tests wait for the spares, not the clock
  return o;
}

struct fixture {
  storage::mem_env env;
  sim_scheduler sched{1};
  std::unique_ptr<sim_executor> ex = std::make_unique<sim_executor>(sched);
  std::unique_ptr<delayed_flusher> flusher =
      std::make_unique<delayed_flusher>(*ex, [] { return milliseconds(2); });
  std::uint64_t synced = 0;

  std::unique_ptr<node_log> open(node_log_options o = prepared()) {
    auto l = node_log::open(env, *flusher, log_path, o);
    EXPECT_TRUE(l.has_value()) << l.err().reason;
    if (!l) return nullptr;
    auto log = std::move(l).value();
    log->set_on_synced([this](std::uint64_t b, status st) {
      EXPECT_TRUE(st.has_value());
      synced = b;
    });
    return log;
  }
  void settle(node_log& log) {
    for (int i = 0; i < 200 && (log.flushing() || log.has_pending() || log.compacting()); ++i) {
      log.flush();
      sched.run_until(sched.now_ms() + 5);
    }
  }
  void crash(std::optional<std::uint64_t> torn = std::nullopt) {
    env.crash(torn);
    ex->halt();
    env.restart();
    ex = std::make_unique<sim_executor>(sched);
    flusher = std::make_unique<delayed_flusher>(*ex, [] { return milliseconds(2); });
  }
  // The file's length on "disk" (zeros included).
  std::uint64_t length(const std::string& p) const {
    auto c = env.contents(p);
    return c ? c->size() : 0;
  }
  // The segment files' lengths, summed (the spare left out).
  std::uint64_t segment_file_bytes() {
    std::uint64_t n = 0;
    auto names = env.list_dir(dir);
    EXPECT_TRUE(names.has_value());
    for (const std::string& name : *names)
      if (name.starts_with("node.log.0")) n += length(dir + "/" + name);
    return n;
  }
};

record::log_record entries_of(std::uint32_t g, std::uint64_t first, const std::vector<std::byte>& data,
                              int n = 1) {
  record::entries e{log_index(first), {}};
  for (int i = 0; i < n; ++i) e.items.push_back(wire::entry{term_id(1), 1, data});
  return record::log_record{group_id(g), std::move(e)};
}

TEST(raft_node_log_prepared, rolls_onto_a_spare_and_cuts_the_zeros_of_the_segment_it_leaves) {
  fixture f;
  const auto d = bytes_of(std::string(1000, 'x'));
  std::uint64_t next = 1;
  {
    auto log = f.open();
    // The segment this open started is prepared if the first spare was ready already (it is prepared on
    // its own thread); if not, the first batch that finds a spare ready (the segment holding more than its
    // preamble) rolls onto it.
    const std::uint64_t at_open = log->prepared_segments();
    ASSERT_LE(at_open, 1u);
    // Fill the prepared segments: once a batch would not fit in the zeros, the log rolls onto the next
    // spare (twice as large as the one before) and cuts the zeros it did not use.
    while (log->prepared_segments() < at_open + 2) {
      ASSERT_TRUE(log->wait_for_prepared_segment());
      log->add(entries_of(0, next++, d));
      f.settle(*log);
      ASSERT_LT(next, 60u);
    }
    const auto newest = static_cast<std::uint32_t>(log->segments());
    ASSERT_EQ(newest, 3u);  // the one open started and two rolls (nothing was deleted)
    // The segment left was prepared: cut to its records, it ends with the last one's data.
    EXPECT_EQ(f.env.contents(seg(newest - 1))->back(), std::byte{'x'});
    // The newest is written over from its first byte: zeros after the records, a spare's whole length.
    EXPECT_EQ(f.env.contents(seg(newest))->back(), std::byte{0});
    EXPECT_EQ(f.length(seg(newest)), at_open == 0 ? 16384u : 32768u);
    EXPECT_GT(f.segment_file_bytes(), log->disk_bytes());
  }
  auto log = f.open();
  EXPECT_EQ(log->tail_bytes_cut(), 0u);  // a clean close cut the zeros: nothing left for recovery
  const group_state g = log->take_group_state(group_id(0));
  ASSERT_EQ(g.entries.size(), next - 1);
  EXPECT_EQ(text(g.entries.back().data), std::string(1000, 'x'));
}

TEST(raft_node_log_prepared, a_clean_close_leaves_every_segment_at_its_logical_length) {
  fixture f;
  auto log = f.open();
  ASSERT_TRUE(log->wait_for_prepared_segment());
  for (std::uint64_t i = 1; i <= 3; ++i) {
    log->add(entries_of(0, i, bytes_of("abc")));
    f.settle(*log);
  }
  ASSERT_EQ(log->prepared_segments(), 1u);
  ASSERT_GT(f.segment_file_bytes(), log->disk_bytes());  // the prepared zeros
  const std::uint64_t logical = log->disk_bytes();
  log.reset();
  EXPECT_EQ(f.segment_file_bytes(), logical);
}

// A crash while the log writes into a prepared segment: every synced batch is there after recovery, the
// zeros past the last record are cut without being counted as a torn tail, and the log goes on.
TEST(raft_node_log_prepared, a_crash_keeps_every_synced_batch_and_the_zeros_are_not_a_torn_tail) {
  fixture f;
  std::uint64_t next = 1;
  std::uint32_t last = 0;  // the prepared segment written when the crash came
  {
    auto log = f.open();
    ASSERT_TRUE(log->wait_for_prepared_segment());
    for (; next <= 4; ++next) {
      log->add(entries_of(0, next, bytes_of("synced")));
      f.settle(*log);
    }
    ASSERT_EQ(log->prepared_segments(), 1u);
    ASSERT_EQ(log->synced_batch(), 4u);
    last = static_cast<std::uint32_t>(log->segments());
    f.crash();
  }
  {
    auto log = f.open();
    EXPECT_EQ(log->tail_bytes_cut(), 0u);
    const group_state g = log->take_group_state(group_id(0));
    ASSERT_EQ(g.entries.size(), 4u);
    EXPECT_EQ(text(g.entries[3].data), "synced");
    // The recovered segment holds its records alone now (no zeros after them).
    EXPECT_EQ(f.env.contents(seg(last))->back(), std::byte{'d'});
    log->add(entries_of(0, next++, bytes_of("after")));
    f.settle(*log);
  }
  auto log = f.open();
  const group_state g = log->take_group_state(group_id(0));
  ASSERT_EQ(g.entries.size(), 5u);
  EXPECT_EQ(text(g.entries.back().data), "after");
}

TEST(raft_node_log_prepared, a_torn_write_into_prepared_zeros_is_cut_and_synced_batches_stay) {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    fixture f;
    {
      auto log = f.open();
      ASSERT_TRUE(log->wait_for_prepared_segment());
      for (std::uint64_t i = 1; i <= 3; ++i) {
        log->add(entries_of(0, i, bytes_of("synced")));
        f.settle(*log);
      }
      ASSERT_EQ(log->prepared_segments(), 1u);
      log->add(entries_of(0, 4, std::vector<std::byte>(300, std::byte{7}), 4));
      log->flush();  // written, not synced
      f.crash(seed);
    }
    std::size_t kept = 0;
    {
      auto log = f.open();
      const group_state g = log->take_group_state(group_id(0));
      ASSERT_TRUE(g.entries.size() == 3 || g.entries.size() == 7)
          << "seed " << seed << ": " << g.entries.size();
      kept = g.entries.size();
      // A torn record is counted; the zeros after it (the spare was 8 KiB) are not.
      EXPECT_LE(log->tail_bytes_cut(), 4 * 320u) << "seed " << seed;
      log->add(entries_of(0, kept + 1, bytes_of("after")));
      f.settle(*log);
    }
    auto log = f.open();
    const group_state g = log->take_group_state(group_id(0));
    ASSERT_EQ(g.entries.size(), kept + 1) << "seed " << seed;
    EXPECT_EQ(text(g.entries.back().data), "after");
  }
}

// A spare renamed into place, then a crash before its header reached the disk: the last segment is all
// zeros (or a header cut short, then zeros). It is removed; the log recovers from the segments before it.
TEST(raft_node_log_prepared, a_last_segment_of_zeros_is_removed) {
  for (const std::size_t header_bytes : {std::size_t{0}, std::size_t{5}}) {
    fixture f;
    {
      auto log = f.open();
      log->add(entries_of(0, 1, bytes_of("kept")));
      f.settle(*log);
    }
    std::vector<std::byte> zeros(8192);
    const auto valid = f.env.contents(seg(1));
    std::copy_n(valid->begin(), header_bytes, zeros.begin());
    ASSERT_EQ(f.segment_file_bytes(), f.length(seg(1)));  // one segment: the zeros are the last
    f.env.set_contents(seg(2), zeros);
    ASSERT_TRUE(f.env.sync_dir(dir).has_value());
    auto log = f.open();
    ASSERT_TRUE(log);
    EXPECT_EQ(log->tail_bytes_cut(), header_bytes);
    const group_state g = log->take_group_state(group_id(0));
    ASSERT_EQ(g.entries.size(), 1u);
    EXPECT_EQ(text(g.entries[0].data), "kept");
    log->add(entries_of(0, 2, bytes_of("next")));
    f.settle(*log);
    log.reset();
    auto again = f.open();
    EXPECT_EQ(again->take_group_state(group_id(0)).entries.size(), 2u);
  }
}

// Zeros are unused room only at the end of the last segment: a segment of zeros followed by another one is
// corruption, as before.
TEST(raft_node_log_prepared, zeros_before_the_last_segment_are_corruption) {
  fixture f;
  {
    auto log = f.open();
    log->add(entries_of(0, 1, bytes_of("kept")));
    f.settle(*log);
  }
  f.env.set_contents(seg(2), std::vector<std::byte>(8192));
  f.env.set_contents(seg(3), *f.env.contents(seg(1)));
  auto l = node_log::open(f.env, *f.flusher, log_path, prepared());
  ASSERT_FALSE(l.has_value());
  EXPECT_EQ(l.err().as<errc>(), errc::corruption);
  EXPECT_NE(l.err().reason.find(seg(2)), std::string::npos) << l.err().reason;
}

// Compaction reads and deletes prepared segments as any others: disk use stays bounded and every group's
// state survives a reopen.
TEST(raft_node_log_prepared, compaction_and_segment_deletion_work_on_prepared_segments) {
  fixture f;
  const node_log_options o = prepared(4096, 1024);
  std::uint64_t next = 1;
  std::uint64_t rolls = 0;
  {
    auto log = f.open(o);
    log->add(entries_of(0, 1, bytes_of("quiet")));
    for (int round = 0; round < 200; ++round) {
      if (round % 4 == 0) log->wait_for_prepared_segment();
      log->add(entries_of(1, next, bytes_of(std::string(200, char('a' + round % 26)))));
      const auto snap = bytes_of("snap");
      log->add(record::log_record{group_id(1),
                                  record::snapshot{log_index(next), term_id(1), log_index(1), {}, 2, snap}});
      ++next;
      f.settle(*log);
      ASSERT_LE(log->disk_bytes(), 2 * log->live_bytes() + 3 * o.segment_bytes + 1024) << "round " << round;
    }
    rolls = log->prepared_segments();
    EXPECT_GT(rolls, 5u);
    EXPECT_GT(log->segments_deleted(), 5u);
    EXPECT_GE(log->entries_carried(), 1u);
    const std::uint64_t logical = log->disk_bytes();
    log.reset();
    EXPECT_EQ(f.segment_file_bytes(), logical);
  }
  auto log = f.open(o);
  EXPECT_EQ(log->tail_bytes_cut(), 0u);
  const group_state quiet = log->take_group_state(group_id(0));
  ASSERT_EQ(quiet.entries.size(), 1u);
  EXPECT_EQ(text(quiet.entries[0].data), "quiet");
  const group_state busy = log->take_group_state(group_id(1));
  EXPECT_EQ(busy.next_index(), log_index(next));
}

// The production path: the rolls run on the thread_flusher's thread over the real file system (a spare
// renamed into place, opened to be written over, the old segment cut).
TEST(raft_node_log_prepared, rolls_on_a_real_disk_through_the_thread_flusher) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "weir-node-log-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string path = tmpl + "/raft/node.log";
  test_support::posted_loop loop;  // completions run on the test's thread
  auto run_posted = [&] { loop.run_posted(); };
  const node_log_options o = prepared(16384, 4096);
  const auto d = bytes_of(std::string(700, 'y'));
  std::uint64_t next = 1;
  {
    auto flusher = std::make_unique<thread_flusher>(loop.poster());
    auto l = node_log::open(storage::default_posix_env(), *flusher, path, o);
    ASSERT_TRUE(l.has_value()) << l.err().reason;
    auto log = std::move(l).value();
    for (; next <= 60; ++next) {
      if (!log->flushing()) log->wait_for_prepared_segment();
      log->add(entries_of(0, next, d));
      log->flush();
      for (int i = 0; i < 100 && (log->flushing() || log->has_pending() || log->compacting()); ++i)
        run_posted();
    }
    EXPECT_GT(log->prepared_segments(), 3u);
    const std::uint64_t logical = log->disk_bytes();
    flusher.reset();  // before the log whose files it writes (thread_flusher.h)
    log.reset();
    std::uint64_t on_disk = 0;
    for (const auto& e : std::filesystem::directory_iterator(tmpl + "/raft"))
      if (e.path().filename().string().starts_with("node.log.0")) on_disk += e.file_size();
    EXPECT_EQ(on_disk, logical);
  }
  run_posted();
  {
    sim_scheduler sched(1);
    sim_executor ex(sched);
    delayed_flusher flusher(ex, [] { return milliseconds(0); });
    auto l = node_log::open(storage::default_posix_env(), flusher, path, node_log_options{16384});
    ASSERT_TRUE(l.has_value()) << l.err().reason;
    EXPECT_EQ((*l)->tail_bytes_cut(), 0u);
    const group_state g = (*l)->take_group_state(group_id(0));
    ASSERT_EQ(g.entries.size(), next - 1);
    EXPECT_EQ(text(g.entries.back().data), std::string(700, 'y'));
  }
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace weir::raft
