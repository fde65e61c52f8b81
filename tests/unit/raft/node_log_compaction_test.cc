// node_log segments and compaction (node_log.h): dead segments are deleted, a quiet group's live entries
// are carried forward, disk use stays bounded by the live state, the single file of old weir is read as
// segment 0, damage outside the last segment's tail is reported with file and offset, and a crash at any
// point recovers a state the log passed through that holds every synced record (randomized, against a
// plain model of a group's log).
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <random>

#include <unistd.h>

#include "raft/byte_codec.h"
#include "raft/node_log.h"
#include "raft/thread_flusher.h"
#include "storage/crc32c.h"
#include "storage/mem_env.h"
#include "support/sim/delayed_flusher.h"
#include "support/sim/sim_scheduler.h"
#include "unit/raft/node_log_sim_fixture.h"
#include "unit/raft/node_log_test_util.h"
#include "unit/raft/posted_loop.h"

namespace weir::raft {
namespace {

using std::chrono::milliseconds;

using test_support::bytes_of;
using test_support::log_path;
using test_support::seg;
using test_support::text;

// An owned record: the test keeps what it added, to replay it into the model.
struct owned_record {
  std::uint32_t group = 0;
  enum kind { entries, term, vote, truncate, snapshot } k = entries;
  std::uint64_t a = 0;  // first / term / vote / from / snapshot index
  std::uint64_t b = 0;  // entries: term of the entries; snapshot: term
  std::uint32_t trailing = 0;
  std::vector<std::string> data;  // entries' data, or the snapshot's (one)

  record::log_record view(std::vector<wire::entry>& scratch) const {
    const group_id g(group);
    switch (k) {
      case entries:
        scratch.clear();
        for (const auto& d : data)
          scratch.push_back(
              wire::entry{term_id(b), 1, std::as_bytes(std::span<const char>(d.data(), d.size()))});
        return {g, record::entries{log_index(a), scratch}};
      case term:
        return {g, record::term{term_id(a)}};
      case vote:
        return {g, record::vote{node_id(a)}};
      case truncate:
        return {g, record::truncate{log_index(a)}};
      case snapshot:
        return {g, record::snapshot{log_index(a),
                                    term_id(b),
                                    log_index(1),
                                    {wire::server{node_id(1), 1, "n1"}},
                                    trailing,
                                    std::as_bytes(std::span<const char>(data[0].data(), data[0].size()))}};
    }
    return {g, record::term{term_id(0)}};
  }
};

// One group's log as Raft sees it: the plain model the recovered state is compared with.
struct model_group {
  std::uint64_t term = 0;
  std::uint64_t vote = 0;
  std::uint64_t snap_index = 0;
  std::string snap_data;
  std::uint64_t start = 1;
  std::vector<std::pair<std::uint64_t, std::string>> entries;

  std::uint64_t next() const { return start + entries.size(); }

  void apply(const owned_record& r) {
    switch (r.k) {
      case owned_record::entries:
        entries.resize(r.a - start);
        for (const auto& d : r.data) entries.emplace_back(r.b, d);
        break;
      case owned_record::term:
        term = r.a;
        vote = 0;
        break;
      case owned_record::vote:
        vote = r.a;
        break;
      case owned_record::truncate:
        entries.resize(r.a - start);
        break;
      case owned_record::snapshot:
        snap_index = r.a;
        snap_data = r.data[0];
        if (r.trailing == 0) {
          entries.clear();
          start = r.a + 1;
        } else if (r.a > r.trailing) {
          const std::uint64_t keep = r.a - r.trailing + 1;
          const std::uint64_t drop = std::min<std::uint64_t>(entries.size(), keep > start ? keep - start : 0);
          entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(drop));
          start += drop;
        }
        break;
    }
  }

  bool matches(const group_state& g, std::string& why) const {
    std::vector<std::pair<std::uint64_t, std::string>> got;
    for (const auto& e : g.entries) got.emplace_back(e.term.value(), text(e.data));
    const std::uint64_t gsnap = g.snapshot ? g.snapshot->index.value() : 0;
    const std::string gdata = g.snapshot ? text(g.snapshot->data) : "";
    if (g.term.value() == term && g.vote.value() == vote && gsnap == snap_index && gdata == snap_data &&
        (entries.empty() ? g.next_index().value() == next() : g.start.value() == start) && got == entries)
      return true;
    why = fmt::format("term {}/{} vote {}/{} snap {}/{} start {}/{} next {}/{} entries {}/{}", g.term.value(),
                      term, g.vote.value(), vote, gsnap, snap_index, g.start.value(), start,
                      g.next_index().value(), next(), got.size(), entries.size());
    return false;
  }
};

using fixture = test_support::sim_log_fixture;

void add(node_log& log, const owned_record& r) {
  std::vector<wire::entry> scratch;
  log.add(r.view(scratch));
}

owned_record entries_rec(std::uint32_t g, std::uint64_t first, std::uint64_t term,
                         std::vector<std::string> d) {
  return owned_record{g, owned_record::entries, first, term, 0, std::move(d)};
}
owned_record snapshot_rec(std::uint32_t g, std::uint64_t index, std::uint32_t trailing, std::string d) {
  return owned_record{g, owned_record::snapshot, index, 1, trailing, {std::move(d)}};
}

TEST(raft_node_log_compaction, dead_segments_go_and_a_quiet_groups_entries_are_carried_forward) {
  fixture f(1, node_log_options{2048});
  model_group quiet;
  model_group busy;
  {
    auto log = f.open();
    const auto q = entries_rec(0, 1, 1, {"quiet one", "quiet two"});
    add(*log, q);
    quiet.apply(q);
    std::uint64_t next = 1;
    for (int round = 0; round < 300; ++round) {
      const auto e = entries_rec(1, next, 1, {std::string(40, char('a' + round % 26)), "x"});
      add(*log, e);
      busy.apply(e);
      next += 2;
      if (round % 5 == 4) {
        const auto s = snapshot_rec(1, next - 1, 3, fmt::format("snap {}", round));
        add(*log, s);
        busy.apply(s);
      }
      f.settle(*log);
      // Disk use stays within twice the live bytes plus three segments (two allowed, one being written).
      ASSERT_LE(log->disk_bytes(), 2 * log->live_bytes() + 3 * f.opts.segment_bytes + 512)
          << "round " << round;
    }
    EXPECT_GT(log->segments_deleted(), 5u);
    EXPECT_GT(log->bytes_reclaimed(), 10 * f.opts.segment_bytes);
    EXPECT_GE(log->entries_carried(), 2u);  // the quiet group's two entries, at least once
    EXPECT_LE(log->segments(), 5u);
    EXPECT_LT(f.env.used_bytes(), 6 * f.opts.segment_bytes);
  }
  auto log = f.open();
  std::string why;
  EXPECT_TRUE(quiet.matches(log->take_group_state(group_id(0)), why)) << why;
  EXPECT_TRUE(busy.matches(log->take_group_state(group_id(1)), why)) << why;
  EXPECT_FALSE(f.env.file_exists(seg(1)));  // the first segment is long gone
}

// Every open starts a segment with every group's preamble. A node that restarts while its groups are quiet
// (no entry, no term or vote) writes no batch, so compaction must also be checked at open: otherwise each
// restart would leave one more preamble-sized segment on disk, and nothing would ever delete them.
TEST(raft_node_log_compaction, restarts_without_writes_do_not_pile_up_segments) {
  fixture f(5, node_log_options{1024});
  model_group g;
  {
    auto log = f.open();
    const auto e = entries_rec(0, 1, 1, {"one", "two", "three"});
    const auto s = snapshot_rec(0, 2, 2, std::string(3000, 's'));  // a preamble of about 3 KiB
    add(*log, e);
    add(*log, s);
    g.apply(e);
    g.apply(s);
    f.settle(*log);
  }
  for (int restart = 0; restart < 6; ++restart) {
    auto log = f.open();
    f.settle(*log);
    // Idle: at most twice the live bytes plus two segments (node_log.h), restart after restart.
    EXPECT_LE(log->disk_bytes(), 2 * log->live_bytes() + 2 * f.opts.segment_bytes) << "restart " << restart;
    EXPECT_EQ(f.env.used_bytes(), log->disk_bytes()) << "restart " << restart;
    EXPECT_LE(log->segments(), 3u) << "restart " << restart;
  }
  auto log = f.open();
  std::string why;
  EXPECT_TRUE(g.matches(log->take_group_state(group_id(0)), why)) << why;  // its entries, carried forward
  EXPECT_FALSE(f.env.file_exists(seg(1)));
}

// Forwards to a mem_env; the `crash_at`-th remove_file crashes it instead (the earlier ones were made and
// are durable: mem_env keeps a removal at once), as a power cut in the middle of a pass's unlinks would.
class crash_on_remove_env final : public storage::env {
 public:
  explicit crash_on_remove_env(storage::mem_env& m) : m_(m) {}
  int crash_at = 0;  // 0: never
  int removes = 0;
  bool crashed = false;

  result<std::unique_ptr<storage::writable_file>> open_writable(const std::string& p,
                                                                storage::open_mode mode) override {
    return m_.open_writable(p, mode);
  }
  result<std::unique_ptr<storage::random_access_file>> open_readable(const std::string& p) override {
    return m_.open_readable(p);
  }
  result<std::vector<std::string>> list_dir(const std::string& d) override { return m_.list_dir(d); }
  status create_dirs(const std::string& d) override { return m_.create_dirs(d); }
  status remove_file(const std::string& p) override {
    if (++removes == crash_at) {
      m_.crash();
      crashed = true;
    }
    return m_.remove_file(p);
  }
  status rename_file(const std::string& from, const std::string& to) override {
    return m_.rename_file(from, to);
  }
  status sync_dir(const std::string& d) override { return m_.sync_dir(d); }
  bool file_exists(const std::string& p) override { return m_.file_exists(p); }

 private:
  storage::mem_env& m_;
};

// Three groups fill about 20 segments while everything they write stays live (so nothing is compacted):
// a quiet one (two entries in the first segment), a trickle that adds one small entry per round and never
// snapshots (a live entry in every segment), and a busy one with large entries. Then the busy group
// installs a snapshot: its entries die at once and the log is 15 or more segments above its bound.
struct backlog {
  std::map<std::uint32_t, model_group> model;

  void write(fixture& f, node_log& log) {
    auto put = [&](const owned_record& r) {
      add(log, r);
      model[r.group].apply(r);
    };
    put(entries_rec(0, 1, 1, {"quiet one", "quiet two"}));
    std::uint64_t next = 1;
    for (int round = 0; round < 40; ++round) {
      put(entries_rec(1, next, 1, {std::string(500, char('a' + round % 26))}));
      put(entries_rec(2, model[2].next(), 1, {fmt::format("trickle {}", round)}));
      ++next;
      f.settle(log);
    }
    ASSERT_EQ(log.segments_deleted(), 0u);
    ASSERT_GE(log.segments(), 18u);
    put(snapshot_rec(1, next - 1, 0, "installed"));
    log.flush();
  }

  void check(node_log& log) const {
    std::string why;
    for (const auto& [g, m] : model)
      EXPECT_TRUE(m.matches(log.take_group_state(group_id(g)), why)) << "group " << g << ": " << why;
  }
};

// Compaction reads a segment back in pieces of 1 MiB (node_log.cc, carried::piece_bytes): records that
// straddle a piece's end, and one larger than a piece, are carried forward whole and byte for byte.
TEST(raft_node_log_compaction, records_across_read_pieces_are_carried_whole) {
  fixture f(3, node_log_options{3u << 20});
  model_group quiet;
  model_group busy;
  auto fill = [](std::size_t n, int k) {
    std::string d(n, 'a');
    for (std::size_t i = 0; i < n; ++i)
      d[i] = static_cast<char>('a' + (i * 7 + static_cast<std::size_t>(k)) % 26);
    return d;
  };
  {
    auto log = f.open();
    // The quiet group's entries, all in the first segment: a record of 1.4 MB, then five of 333,333 bytes.
    std::vector<owned_record> quiet_records = {entries_rec(0, 1, 1, {fill(700'001, 1), fill(700'001, 2)})};
    for (int k = 0; k < 5; ++k)
      quiet_records.push_back(entries_rec(0, 3 + static_cast<std::uint64_t>(k), 1, {fill(333'333, 3 + k)}));
    for (const auto& r : quiet_records) {
      add(*log, r);
      quiet.apply(r);
      f.settle(*log);
    }
    // A busy group whose entries die at its snapshots, until compaction took the first segment.
    std::uint64_t next = 1;
    for (int round = 0; round < 80 && f.env.file_exists(seg(1)); ++round) {
      const auto e = entries_rec(1, next++, 1, {fill(500'001, round)});
      add(*log, e);
      busy.apply(e);
      if (round % 3 == 2) {
        const auto sn = snapshot_rec(1, next - 1, 1, fmt::format("snap {}", round));
        add(*log, sn);
        busy.apply(sn);
      }
      f.settle(*log);
    }
    EXPECT_FALSE(f.env.file_exists(seg(1)));
    EXPECT_GE(log->entries_carried(), 7u);
  }
  auto log = f.open();
  std::string why;
  EXPECT_TRUE(quiet.matches(log->take_group_state(group_id(0)), why)) << why;
  EXPECT_TRUE(busy.matches(log->take_group_state(group_id(1)), why)) << why;
}

// Under sustained writes a one-segment pass (three disk round trips) fell behind by several segments. A
// pass takes every segment it needs at once: the first deletion already brings the log under its bound,
// with the live entries of all those segments carried in one go.
TEST(raft_node_log_compaction, one_pass_takes_every_segment_above_the_bound) {
  fixture f(6, node_log_options{1024});
  backlog b;
  {
    auto log = f.open();
    b.write(f, *log);
    const std::uint64_t before = log->segments();
    const std::uint64_t disk_before = log->disk_bytes();
    while (log->segments_deleted() == 0) {
      ASSERT_TRUE(f.sched.run_one()) << "no deletion";
    }
    // The first deletion is the whole pass: all but the newest few segments went at once, and the log is
    // within a segment of its bound (the pass counts on the live entries' estimated bytes, and carrying
    // them into one record per group shrinks that estimate: the next pass may take one more).
    EXPECT_GE(log->segments_deleted(), before - 5) << before << " segments before";
    EXPECT_LE(log->disk_bytes(), 2 * log->live_bytes() + 3 * f.opts.segment_bytes)
        << disk_before << " before";
    EXPECT_GE(log->entries_carried(), 30u);  // the quiet group's and the trickle's, from every segment
    f.settle(*log);
    EXPECT_LE(log->segments(), 3u);
  }
  auto log = f.open();
  b.check(*log);
  EXPECT_FALSE(f.env.file_exists(seg(1)));
}

// A crash between two unlinks of a pass: the oldest segment is gone, the others are still there. The log
// left is a suffix of the segments and recovers every record (all of them were synced before the pass).
TEST(raft_node_log_compaction, a_crash_in_the_middle_of_a_pass_recovers) {
  for (int crash_at : {2, 5, 11}) {
    fixture f(7, node_log_options{1024});
    crash_on_remove_env env(f.env);
    env.crash_at = crash_at;
    backlog b;
    {
      auto l = node_log::open(env, *f.flusher, log_path, f.opts);
      ASSERT_TRUE(l.has_value()) << l.err().reason;
      auto log = std::move(l).value();
      b.write(f, *log);
      while (!env.crashed) {
        ASSERT_TRUE(f.sched.run_one()) << "no crash at unlink " << crash_at;
      }
      f.sched.run_until(f.sched.now_ms() + 100);
      EXPECT_EQ(log->segments_deleted(), static_cast<std::uint64_t>(crash_at - 1));
      EXPECT_FALSE(log->compacting());  // given up: the env is down
    }
    f.crash(std::nullopt);
    EXPECT_FALSE(f.env.file_exists(seg(static_cast<std::uint32_t>(crash_at - 1))));
    EXPECT_TRUE(f.env.file_exists(seg(static_cast<std::uint32_t>(crash_at)))) << "crash at " << crash_at;
    auto log = f.open();
    ASSERT_TRUE(log) << "crash at " << crash_at;
    b.check(*log);
    f.settle(*log);  // and compaction finishes the pass's work
    EXPECT_LE(log->disk_bytes(), 2 * log->live_bytes() + 2 * f.opts.segment_bytes);
  }
}

TEST(raft_node_log_compaction, the_single_file_of_old_weir_is_read_as_segment_0_and_compacted_away) {
  fixture f(2, node_log_options{1024});
  {
    // A version-1 file: header, then records of the five original kinds.
    std::vector<std::byte> file;
    byte_writer w(file);
    w.text("weirraft");
    w.u32(1);
    w.u32(storage::crc32c(file));
    const std::vector<std::byte> d = bytes_of("old entry");
    record::encode_record({group_id(4), record::term{term_id(3)}}, file);
    record::encode_record({group_id(4), record::vote{node_id(2)}}, file);
    record::encode_record({group_id(4), record::entries{log_index(1), {wire::entry{term_id(3), 1, d}}}},
                          file);
    ASSERT_TRUE(f.env.create_dirs("/data/raft").has_value());
    f.env.set_contents(log_path, file);
  }
  auto log = f.open();
  group_state g = log->take_group_state(group_id(4));
  EXPECT_EQ(g.term, term_id(3));
  EXPECT_EQ(g.vote, node_id(2));
  ASSERT_EQ(g.entries.size(), 1u);
  EXPECT_EQ(text(g.entries[0].data), "old entry");
  EXPECT_TRUE(f.env.file_exists(seg(1)));  // the new segment of this run
  std::uint64_t next = 1;
  for (int i = 0; i < 100; ++i) {
    add(*log, entries_rec(5, next, 1, {std::string(60, 'y')}));
    add(*log, snapshot_rec(5, next, 1, "s"));
    ++next;
    f.settle(*log);
  }
  EXPECT_FALSE(f.env.file_exists(log_path));
  log.reset();
  log = f.open();
  g = log->take_group_state(group_id(4));
  ASSERT_EQ(g.entries.size(), 1u);  // carried forward out of the old file
  EXPECT_EQ(text(g.entries[0].data), "old entry");
  EXPECT_EQ(g.vote, node_id(2));
}

TEST(raft_node_log_compaction, damage_before_the_last_tail_names_the_file_and_offset) {
  fixture f(3, node_log_options{});
  {
    auto log = f.open();
    add(*log, entries_rec(0, 1, 1, {"a", "b", "c"}));
    f.settle(*log);
  }
  auto second = f.open();  // segment 2 begins
  second.reset();
  auto bytes = *f.env.contents(seg(1));
  bytes[bytes.size() - 3] ^= std::byte{0x40};
  f.env.set_contents(seg(1), bytes);
  auto l = node_log::open(f.env, *f.flusher, log_path, f.opts);
  ASSERT_FALSE(l.has_value());
  EXPECT_EQ(l.err().as<errc>(), errc::corruption);
  EXPECT_NE(l.err().reason.find(seg(1) + " at byte 16"), std::string::npos) << l.err().reason;
}

TEST(raft_node_log_compaction, a_missing_segment_in_the_middle_is_corruption) {
  fixture f(4, node_log_options{});
  for (int i = 0; i < 3; ++i) f.open();  // segments 1, 2, 3
  ASSERT_TRUE(f.env.remove_file(seg(2)).has_value());
  auto l = node_log::open(f.env, *f.flusher, log_path, f.opts);
  ASSERT_FALSE(l.has_value());
  EXPECT_NE(l.err().reason.find("segment 2 is missing"), std::string::npos) << l.err().reason;
}

// Random records of 4 groups (one of them quiet), a tiny segment size, crashes (half of them torn) at
// random moments: every recovery must equal the model after some prefix of the records that holds every
// record of a synced batch, and disk use stays bounded.
TEST(raft_node_log_compaction, random_crashes_recover_every_synced_record) {
  std::uint64_t total_carried = 0;
  // WEIR_NODE_LOG_SEEDS=n runs more seeds.
  const std::uint64_t seeds =
      std::getenv("WEIR_NODE_LOG_SEEDS") ? std::stoull(std::getenv("WEIR_NODE_LOG_SEEDS")) : 40;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    // Half the seeds seal batches at a few hundred bytes, so that several full batches wait behind a
    // running flush (and a crash finds some of them written, some not).
    fixture f(seed, node_log_options{1500, seed % 2 == 0 ? 0u : 64u + seed % 5 * 100});
    // Half the seeds (crossing the others) write over prepared segments: early rolls onto spares, zeros
    // cut at each roll, crashes and torn writes over zeros written ahead.
    if (seed % 4 < 2) {
      f.opts.prepare_segments = true;
      f.opts.prepared_first_bytes = 512;
      f.opts.prepared_bytes_per_second = 0;
    }
    std::mt19937_64 rng(seed);
    auto chance = [&](double p) { return std::uniform_real_distribution<>(0, 1)(rng) < p; };
    auto pick = [&](std::uint64_t lo, std::uint64_t hi) {
      return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
    };
    std::map<std::uint32_t, model_group> model;  // what the log holds once everything added is durable
    std::map<std::uint32_t, model_group> base;   // the state recovered at the last open
    std::vector<std::pair<std::uint64_t, owned_record>> since_open;  // (batch, record)
    auto log = f.open();
    std::uint64_t deleted = 0;
    std::uint64_t carried = 0;
    std::uint64_t rolls = 0;  // onto prepared segments
    int serial = 0;
    for (int step = 0; step < 400; ++step) {
      // The spares are prepared on a thread of their own: waiting for the next one while no roll is under
      // way (the roll asks for it) keeps whether a spare is ready out of the thread's timing, mostly.
      if (f.opts.prepare_segments && !log->flushing()) log->wait_for_prepared_segment();
      const int n = static_cast<int>(pick(1, 4));
      for (int i = 0; i < n; ++i) {
        const std::uint32_t g = chance(0.03) ? 3 : static_cast<std::uint32_t>(pick(0, 2));
        model_group& m = model[g];
        owned_record r;
        r.group = g;
        const double roll = std::uniform_real_distribution<>(0, 1)(rng);
        if (roll < 0.08) {
          r.k = owned_record::term;
          r.a = m.term + 1;
        } else if (roll < 0.14) {
          r.k = owned_record::vote;
          r.a = pick(1, 3);
        } else if (roll < 0.2 && m.next() > m.start) {
          r.k = owned_record::truncate;
          r.a = pick(m.start, m.next());
        } else if (roll < 0.3 && m.next() > std::max(m.start, m.snap_index + 1)) {
          r.k = owned_record::snapshot;
          r.a = pick(std::max(m.start, m.snap_index + 1), m.next() - 1);
          r.b = 1;
          r.trailing = static_cast<std::uint32_t>(pick(1, 6));
          r.data = {fmt::format("snap {}", ++serial)};
        } else if (roll < 0.32) {
          r.k = owned_record::snapshot;  // an installed snapshot
          r.a = std::max(m.next(), m.snap_index + 1) + pick(0, 5);
          r.b = 1;
          r.trailing = 0;
          r.data = {fmt::format("installed {}", ++serial)};
        } else {
          r.k = owned_record::entries;
          r.a = m.next();
          r.b = std::max<std::uint64_t>(m.term, 1);
          for (std::uint64_t k = pick(1, 4); k > 0; --k)
            r.data.push_back(fmt::format("e{}-{}", ++serial, std::string(pick(0, 60), 'z')));
        }
        m.apply(r);
        add(*log, r);
        since_open.emplace_back(log->open_batch(), r);
      }
      log->flush();
      f.sched.run_until(f.sched.now_ms() + static_cast<std::int64_t>(pick(0, 6)));
      if (step % 25 == 24) {
        // Idle, the log holds at most twice its live bytes plus two segments, and one batch (a segment
        // ends after the batch that fills it).
        f.settle(*log);
        ASSERT_LE(log->disk_bytes(), 2 * log->live_bytes() + 2 * f.opts.segment_bytes + 2048)
            << "seed " << seed << " step " << step;
      }
      if (!chance(0.04)) continue;

      // A crash: the synced batches must all be there; the in-flight one may be there in part.
      const std::uint64_t synced = log->synced_batch();
      const std::uint64_t written = log->flushing() ? log->flushing_batch() : synced;
      deleted += log->segments_deleted();
      carried += log->entries_carried();
      rolls += log->prepared_segments();
      const bool torn = chance(0.5);
      f.crash(torn ? std::optional<std::uint64_t>(rng()) : std::nullopt);
      log.reset();
      log = f.open();
      ASSERT_TRUE(log) << "seed " << seed << " step " << step;
      std::map<std::uint32_t, group_state> got;
      for (std::uint32_t g = 0; g < 4; ++g) got[g] = log->take_group_state(group_id(g));
      std::map<std::uint32_t, model_group> cand = base;
      std::size_t i = 0;
      for (; i < since_open.size() && since_open[i].first <= synced; ++i)
        cand[since_open[i].second.group].apply(since_open[i].second);
      bool found = false;
      std::string why;
      for (;;) {
        bool all = true;
        for (std::uint32_t g = 0; g < 4 && all; ++g) {
          all = cand[g].matches(got[g], why);
          if (!all) why = fmt::format("group {} after {} of {} records: {}", g, i, since_open.size(), why);
        }
        if (all) {
          found = true;
          break;
        }
        if (i == since_open.size() || since_open[i].first > written) break;
        cand[since_open[i].second.group].apply(since_open[i].second);
        ++i;
      }
      ASSERT_TRUE(found) << "seed " << seed << " step " << step << (torn ? " (torn)" : "") << ": " << why;
      model = cand;
      base = cand;
      since_open.clear();
    }
    deleted += log->segments_deleted();
    carried += log->entries_carried();
    rolls += log->prepared_segments();
    if (f.opts.prepare_segments) {
      EXPECT_GT(rolls, 0u) << "seed " << seed;
    }
    EXPECT_GT(deleted, 0u) << "seed " << seed;
    total_carried += carried;
  }
  EXPECT_GT(total_carried, 0u);  // the quiet group's entries
}

// The production path: thread_flusher (batches, directory syncs, the segment read and the unlink on its
// own thread) over the real file system.
TEST(raft_node_log_compaction, compacts_on_a_real_disk_through_the_thread_flusher) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "weir-node-log-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string path = tmpl + "/raft/node.log";
  test_support::posted_loop loop;  // completions run on the test's thread
  auto run_posted = [&] { loop.run_posted(); };
  model_group quiet;
  model_group busy;
  {
    auto flusher = std::make_unique<thread_flusher>(loop.poster());
    auto l = node_log::open(storage::default_posix_env(), *flusher, path, node_log_options{4096});
    ASSERT_TRUE(l.has_value()) << l.err().reason;
    auto log = std::move(l).value();
    const auto q = entries_rec(0, 1, 1, {"quiet"});
    add(*log, q);
    quiet.apply(q);
    std::uint64_t next = 1;
    for (int round = 0; round < 200; ++round) {
      const auto e = entries_rec(1, next, 1, {std::string(200, char('a' + round % 26))});
      add(*log, e);
      busy.apply(e);
      const auto s = snapshot_rec(1, next, 2, "snap");
      add(*log, s);
      busy.apply(s);
      ++next;
      log->flush();
      for (int i = 0; i < 100 && (log->flushing() || log->compacting()); ++i) run_posted();
    }
    EXPECT_GT(log->segments_deleted(), 3u);
    EXPECT_GE(log->entries_carried(), 1u);
    std::uint64_t on_disk = 0;
    for (const auto& f : std::filesystem::directory_iterator(tmpl + "/raft")) on_disk += f.file_size();
    EXPECT_EQ(on_disk, log->disk_bytes());
    EXPECT_LE(on_disk, 2 * log->live_bytes() + 2 * 4096 + 512);
    flusher.reset();  // before the log whose files it writes (thread_flusher.h)
  }
  run_posted();
  {
    sim_scheduler sched(1);
    sim_executor ex(sched);
    delayed_flusher flusher(ex, [] { return milliseconds(0); });
    auto l = node_log::open(storage::default_posix_env(), flusher, path, node_log_options{4096});
    ASSERT_TRUE(l.has_value()) << l.err().reason;
    std::string why;
    EXPECT_TRUE(quiet.matches((*l)->take_group_state(group_id(0)), why)) << why;
    EXPECT_TRUE(busy.matches((*l)->take_group_state(group_id(1)), why)) << why;
  }
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace weir::raft
