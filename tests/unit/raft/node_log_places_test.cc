// node_log entry places and kept segments (node_log.h): every entry of a durable batch is reported where
// its bytes really sit (the record there checks out and holds them), before the batch is reported synced,
// across sealed batches, rolls and prepared segments, carries and rewrites; recovery gives the same places;
// a segment compaction is done with is renamed to its kept name when the caller keeps it, the log reopens
// without it, never reuses its number, and drop_kept unlinks exactly the ones no longer needed.
#include <gtest/gtest.h>

#include <cctype>
#include <deque>
#include <filesystem>
#include <random>
#include <set>

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

void PrintTo(const entry_place& p, std::ostream* os) {
  *os << "(" << p.segment << ", " << p.record_offset << ", " << p.data_offset << ")";
}

namespace {

using std::chrono::milliseconds;

using test_support::bytes_of;
using test_support::log_path;
using test_support::seg;
using test_support::text;

using entry_key = std::pair<std::uint32_t, std::uint64_t>;  // (group, index)

std::uint32_t le32(std::span<const std::byte> b, std::size_t at) {
  std::uint32_t v = 0;
  byte_reader r(b.subspan(at, 4));
  r.u32(v);
  return v;
}

// What a place points at, read from the files of the log at `base` (the kept name if the segment's is
// gone): the record's type and the entry's data, after checking the record's length and CRC.
struct placed {
  std::uint8_t type = 0;
  std::string data;
};

result<placed> read_place(storage::env& env, const std::string& base, const entry_place& p) {
  auto fail = [&](const std::string& why) {
    return make_error(errc::corruption,
                      fmt::format("place ({}, {}, {}): {}", p.segment, p.record_offset, p.data_offset, why));
  };
  if (p.segment == 0) return fail("segment 0");
  std::string path = node_log::segment_path(base, p.segment);
  if (!env.file_exists(path)) path = node_log::kept_segment_path(base, p.segment);
  auto file = storage::read_whole_file(env, path);
  if (!file) return fail("cannot read " + path);
  const std::span<const std::byte> all(*file);
  if (p.record_offset < record::file_header_size || p.record_offset + 8 > all.size())
    return fail(fmt::format("past the end of {} ({} bytes)", path, all.size()));
  const std::uint32_t len = le32(all, p.record_offset);
  if (p.record_offset + 8 + len > all.size())
    return fail(fmt::format("a body of {} bytes past the end", len));
  const auto body = all.subspan(p.record_offset + 8, len);
  if (storage::crc32c(body) != le32(all, p.record_offset + 4)) return fail("the record's CRC does not match");
  if (p.data_offset < 4 + 17 || p.data_offset > len)
    return fail(fmt::format("data offset past a body of {}", len));
  const std::uint32_t size = le32(body, p.data_offset - 4);  // the entry's length field
  if (std::size_t{p.data_offset} + size > len) return fail(fmt::format("{} data bytes past the body", size));
  const auto data = body.subspan(p.data_offset, size);
  return placed{static_cast<std::uint8_t>(body[0]),
                std::string(reinterpret_cast<const char*>(data.data()), size)};
}

::testing::AssertionResult holds(storage::env& env, const std::string& base, const entry_place& p,
                                 const std::string& want) {
  auto got = read_place(env, base, p);
  if (!got) return ::testing::AssertionFailure() << got.err().reason;
  if (got->data != want)
    return ::testing::AssertionFailure()
           << "place (" << p.segment << ", " << p.record_offset << ", " << p.data_offset << ") holds \""
           << got->data << "\", not \"" << want << "\"";
  return ::testing::AssertionSuccess();
}

using fixture = test_support::sim_log_fixture;

record::log_record entries_of(std::uint32_t g, std::uint64_t first, const std::vector<std::string>& data,
                              std::vector<wire::entry>& scratch) {
  scratch.clear();
  for (const auto& d : data)
    scratch.push_back(wire::entry{term_id(1), 1, std::as_bytes(std::span<const char>(d.data(), d.size()))});
  return {group_id(g), record::entries{log_index(first), scratch}};
}

record::log_record snapshot_of(std::uint32_t g, std::uint64_t index, std::uint32_t trailing) {
  static const std::string data = "snap";
  return {group_id(g), record::snapshot{log_index(index),
                                        term_id(1),
                                        log_index(1),
                                        {wire::server{node_id(1), 1, "n1"}},
                                        trailing,
                                        std::as_bytes(std::span<const char>(data.data(), data.size()))}};
}

// One group as the test wrote it: its live entries by index and its next index.
struct group_model {
  std::uint64_t start = 1;
  std::uint64_t next = 1;
  std::map<std::uint64_t, std::string> live;

  void write(std::uint64_t first, const std::vector<std::string>& data) {
    live.erase(live.lower_bound(first), live.end());
    for (const auto& d : data) live[first++] = d;
    next = first;
  }
  void truncate(std::uint64_t from) {
    live.erase(live.lower_bound(from), live.end());
    next = from;
  }
  void snapshot(std::uint64_t index, std::uint32_t trailing) {
    const std::uint64_t keep = index > trailing ? index - trailing + 1 : 1;
    live.erase(live.begin(), live.lower_bound(keep));
    start = std::max(start, keep);
  }
};

// Watches a log's reports: the entries the test added are expected in the order added, each before its
// batch is reported synced and pointing at an `entries` record holding its data; a `carry` record's entry
// must hold data once written at that index. Keeps the newest place of each entry.
struct place_watch {
  struct expected {
    entry_key key;
    std::string data;
    std::uint64_t batch = 0;
  };
  storage::env& env;
  std::string base;
  std::deque<expected> queue;
  std::map<entry_key, std::set<std::string>> written;
  std::map<entry_key, entry_place> newest;
  std::vector<std::pair<entry_key, entry_place>> all;  // every report, in order
  std::uint64_t reports = 0;
  std::uint64_t carried = 0;
  std::uint64_t synced_calls = 0;

  entry_place at(std::uint32_t g, std::uint64_t i) const {
    auto it = newest.find({g, i});
    return it == newest.end() ? entry_place{} : it->second;
  }
  void attach(node_log& log) {
    log.set_on_placed([this](group_id g, log_index i, const entry_place& p) { on_placed(g, i, p); });
    log.set_on_synced([this](std::uint64_t b, status st) {
      ASSERT_TRUE(st.has_value()) << st.err().reason;
      ++synced_calls;
      // Every entry of batch b was reported before this.
      if (!queue.empty()) {
        EXPECT_GT(queue.front().batch, b)
            << "entry " << queue.front().key.first << "/" << queue.front().key.second << " of batch "
            << queue.front().batch << " not placed at its sync";
      }
    });
  }
  void add(node_log& log, std::uint32_t g, std::uint64_t first, const std::vector<std::string>& data) {
    std::vector<wire::entry> scratch;
    const std::uint64_t batch = log.add(entries_of(g, first, data, scratch));
    for (const auto& d : data) {
      queue.push_back(expected{{g, first}, d, batch});
      written[{g, first++}].insert(d);
    }
  }
  void on_placed(group_id g, log_index i, const entry_place& p) {
    ++reports;
    const entry_key key{g.value(), i.value()};
    auto got = read_place(env, base, p);
    ASSERT_TRUE(got.has_value()) << "entry " << key.first << "/" << key.second << ": " << got.err().reason;
    if (got->type == 1) {
      ASSERT_FALSE(queue.empty()) << "an entry placed that was not added: " << key.first << "/" << key.second;
      const expected& e = queue.front();
      EXPECT_EQ(e.key, key) << "placed out of order";
      EXPECT_EQ(got->data, e.data) << "entry " << key.first << "/" << key.second;
      queue.pop_front();
    } else {
      ASSERT_EQ(got->type, 7) << "entry " << key.first << "/" << key.second << " placed in a record of type "
                              << int(got->type);
      ++carried;
      EXPECT_TRUE(written[key].contains(got->data))
          << "carried entry " << key.first << "/" << key.second << " holds \"" << got->data << "\"";
    }
    newest[key] = p;
    all.emplace_back(key, p);
  }
};

struct places_config {
  const char* name;
  node_log_options opts;
};

// Three groups write entries of random sizes (group 2 rarely: its entries in old segments are carried
// forward), rewrite their tails and take snapshots, over small segments: every entry the test adds is
// reported once its batch is durable, in order, before the batch's on_synced, pointing at its bytes; carries
// are reported too; the newest place of each live entry holds its data; after a reopen, group_state's places
// are those newest places.
void run_places_workload(const places_config& c, std::uint64_t seed) {
  SCOPED_TRACE(c.name);
  fixture f(seed, c.opts);
  std::mt19937_64 rng(seed);
  auto pick = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  place_watch w{f.env, log_path};
  std::map<std::uint32_t, group_model> model;
  int serial = 0;
  {
    auto log = f.open();
    w.attach(*log);
    for (int step = 0; step < 300; ++step) {
      if (f.opts.prepare_segments && !log->flushing()) log->wait_for_prepared_segment();
      for (int n = static_cast<int>(pick(1, 4)); n > 0; --n) {
        const std::uint32_t g = pick(0, 20) == 0 ? 2 : static_cast<std::uint32_t>(pick(0, 1));
        group_model& m = model[g];
        const std::uint64_t roll = pick(0, 99);
        if (roll < 8 && m.next > m.start) {
          // A rewrite of the tail: a truncate, then new entries from there (same batch or a later one).
          const std::uint64_t from = pick(m.start, m.next - 1);
          log->add({group_id(g), record::truncate{log_index(from)}});
          m.truncate(from);
          std::vector<std::string> d = {fmt::format("rewrite {}", ++serial)};
          w.add(*log, g, from, d);
          m.write(from, d);
        } else if (roll < 14 && g != 2 && m.next > m.start + 1) {
          const auto t = static_cast<std::uint32_t>(pick(1, 3));
          log->add(snapshot_of(g, m.next - 1, t));
          m.snapshot(m.next - 1, t);
        } else {
          std::vector<std::string> d;
          for (std::uint64_t k = pick(1, 3); k > 0; --k) {
            ++serial;
            d.push_back(fmt::format("e{}/{}", serial, std::string(pick(0, 90), char('a' + serial % 26))));
          }
          w.add(*log, g, m.next, d);
          m.write(m.next, d);
        }
      }
      log->flush();
      f.sched.run_until(f.sched.now_ms() + static_cast<std::int64_t>(pick(0, 6)));
    }
    f.settle(*log);
    EXPECT_TRUE(w.queue.empty()) << w.queue.size() << " entries never placed";
    EXPECT_GT(w.synced_calls, 20u);
    EXPECT_GT(log->segments() + log->segments_deleted(), 3u);  // rolled several times
    EXPECT_GT(log->segments_deleted(), 0u);
    EXPECT_GT(w.carried, 0u);
    EXPECT_EQ(w.carried, log->entries_carried());  // every carried entry reported, once
    if (f.opts.prepare_segments) {
      EXPECT_GT(log->prepared_segments(), 0u);
    }
    for (const auto& [g, m] : model)
      for (const auto& [i, d] : m.live) {
        auto it = w.newest.find({g, i});
        ASSERT_NE(it, w.newest.end()) << "entry " << g << "/" << i << " never placed";
        EXPECT_TRUE(holds(f.env, log_path, it->second, d)) << "entry " << g << "/" << i;
      }
  }
  auto log = f.open();
  for (const auto& [g, m] : model) {
    const group_state s = log->take_group_state(group_id(g));
    ASSERT_EQ(s.places.size(), s.entries.size()) << "group " << g;
    ASSERT_EQ(s.entries.size(), m.live.size()) << "group " << g;
    for (std::size_t k = 0; k < s.entries.size(); ++k) {
      const std::uint64_t i = s.start.value() + k;
      ASSERT_TRUE(m.live.contains(i)) << "group " << g << " index " << i;
      EXPECT_EQ(text(s.entries[k].data), m.live.at(i));
      EXPECT_EQ(s.places[k], w.at(g, i)) << "group " << g << " index " << i;
      EXPECT_TRUE(holds(f.env, log_path, s.places[k], m.live.at(i))) << "group " << g << " index " << i;
    }
  }
}

TEST(raft_node_log_places, every_entry_is_placed_before_its_batch_is_synced) {
  const places_config configs[] = {
      {"rolls", node_log_options{2048, 0}},
      {"sealed batches and rolls", node_log_options{1500, 300}},
      {"prepared segments", node_log_options{1500, 200, true, 512, 0}},
  };
  for (const auto& c : configs)
    for (std::uint64_t seed = 1; seed <= 4; ++seed) run_places_workload(c, seed);
}

TEST(raft_node_log_places, a_rewrite_is_reported_at_its_new_place) {
  fixture f(1, node_log_options{});
  auto log = f.open();
  place_watch w{f.env, log_path};
  w.attach(*log);
  w.add(*log, 3, 1, {"one", "two", "three"});
  f.settle(*log);
  const entry_place old_two = w.at(3, 2);
  // In a later batch: the tail from 2 cut and written again.
  log->add({group_id(3), record::truncate{log_index(2)}});
  w.add(*log, 3, 2, {"TWO", "THREE"});
  // And within one batch: written, cut and written again; the later write is reported last.
  w.add(*log, 3, 4, {"four"});
  log->add({group_id(3), record::truncate{log_index(4)}});
  w.add(*log, 3, 4, {"FOUR"});
  f.settle(*log);
  EXPECT_TRUE(w.queue.empty());
  EXPECT_EQ(w.reports, 7u);
  EXPECT_NE(w.at(3, 2), old_two);
  EXPECT_TRUE(holds(f.env, log_path, w.at(3, 1), "one"));
  EXPECT_TRUE(holds(f.env, log_path, w.at(3, 2), "TWO"));
  EXPECT_TRUE(holds(f.env, log_path, w.at(3, 3), "THREE"));
  EXPECT_TRUE(holds(f.env, log_path, w.at(3, 4), "FOUR"));
  EXPECT_TRUE(holds(f.env, log_path, old_two, "two"));  // the old bytes are still where they were
  log.reset();
  log = f.open();
  const group_state s = log->take_group_state(group_id(3));
  ASSERT_EQ(s.places.size(), 4u);
  EXPECT_EQ(s.places[1], w.at(3, 2));
  EXPECT_EQ(s.places[3], w.at(3, 4));
}

TEST(raft_node_log_places, a_failed_batch_reports_no_places) {
  fixture f(1, node_log_options{});
  auto log = f.open();
  std::vector<entry_key> placed_keys;
  std::vector<std::pair<std::uint64_t, bool>> synced;
  log->set_on_placed(
      [&](group_id g, log_index i, const entry_place&) { placed_keys.emplace_back(g.value(), i.value()); });
  log->set_on_synced([&](std::uint64_t b, status st) { synced.emplace_back(b, st.has_value()); });
  std::vector<wire::entry> scratch;
  log->add(entries_of(0, 1, {"kept"}, scratch));
  f.settle(*log);
  ASSERT_EQ(placed_keys.size(), 1u);
  f.env.fail_next_syncs(1);
  log->add(entries_of(0, 2, {"lost"}, scratch));
  f.settle(*log);
  log->add(entries_of(0, 3, {"after"}, scratch));  // the log is poisoned: this batch fails too
  f.settle(*log);
  ASSERT_EQ(synced.size(), 3u);
  EXPECT_TRUE(synced[0].second);
  EXPECT_FALSE(synced[1].second);
  EXPECT_FALSE(synced[2].second);
  EXPECT_EQ(placed_keys, (std::vector<entry_key>{{0, 1}}));
}

// Places are those of the last write of each index that survived, after a crash (torn or not); half the
// seeds over prepared segments (a crash may leave zeros after the last record, cut at open).
TEST(raft_node_log_places, recovered_places_point_at_the_recovered_entries) {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    fixture f(seed, node_log_options{1024, 256, seed % 2 == 0, 512, 0});
    std::mt19937_64 rng(seed);
    std::uint64_t next = 1;
    int serial = 0;
    std::uint64_t checked = 0;
    std::uint64_t rolls = 0;  // onto prepared segments
    for (int life = 0; life < 4; ++life) {
      auto log = f.open();
      ASSERT_TRUE(log);
      const group_state s = log->take_group_state(group_id(1));
      ASSERT_EQ(s.places.size(), s.entries.size());
      for (std::size_t k = 0; k < s.entries.size(); ++k) {
        EXPECT_TRUE(holds(f.env, log_path, s.places[k], text(s.entries[k].data)))
            << "seed " << seed << " life " << life << " entry " << s.start.value() + k;
        ++checked;
      }
      next = s.next_index().value();
      std::vector<wire::entry> scratch;
      for (int step = 0; step < 60; ++step) {
        if (f.opts.prepare_segments && !log->flushing()) log->wait_for_prepared_segment();
        const std::uint64_t from =
            next > 1 && rng() % 5 == 0 ? next - 1 - rng() % std::min<std::uint64_t>(next - 1, 3) : next;
        if (from < next) log->add({group_id(1), record::truncate{log_index(from)}});
        std::vector<std::string> d = {fmt::format("v{}-{}", ++serial, std::string(rng() % 50, 'q'))};
        log->add(entries_of(1, from, d, scratch));
        next = from + 1;
        log->flush();
        f.sched.run_until(f.sched.now_ms() + static_cast<std::int64_t>(rng() % 4));
      }
      rolls += log->prepared_segments();
      f.crash(rng() % 2 ? std::optional<std::uint64_t>(rng()) : std::nullopt);
    }
    EXPECT_GT(checked, 50u) << "seed " << seed;
    EXPECT_EQ(rolls > 0, f.opts.prepare_segments) << "seed " << seed;
  }
}

TEST(raft_node_log_places, entries_of_the_version_1_file_have_no_place) {
  fixture f(1, node_log_options{});
  std::vector<std::byte> file;
  byte_writer w(file);
  w.text("weirraft");
  w.u32(1);
  w.u32(storage::crc32c(file));
  const std::vector<std::byte> d = bytes_of("old entry");
  record::encode_record({group_id(4), record::entries{log_index(1), {wire::entry{term_id(3), 1, d}}}}, file);
  ASSERT_TRUE(f.env.create_dirs("/data/raft").has_value());
  f.env.set_contents(log_path, file);
  auto log = f.open();
  const group_state g = log->take_group_state(group_id(4));
  ASSERT_EQ(g.entries.size(), 1u);
  ASSERT_EQ(g.places.size(), 1u);
  EXPECT_EQ(g.places[0], entry_place{});
}

// ---- kept segments ----

// A quiet group's two entries in the first segment, then a busy group whose entries die at its snapshots,
// for `rounds` rounds over segments of 1 KiB: compaction carries the quiet entries forward and takes the old
// segments out of the log.
struct churn {
  place_watch& w;
  std::uint64_t next = 1;
  int round = 0;

  void quiet(node_log& log) { w.add(log, 0, 1, {"quiet one", "quiet two"}); }
  void run(fixture& f, node_log& log, int rounds) {
    for (int end = round + rounds; round < end; ++round) {
      w.add(log, 1, next, {fmt::format("busy {} {}", round, std::string(40, char('a' + round % 26)))});
      log.add(snapshot_of(1, next, 1));
      ++next;
      f.settle(log);
      ASSERT_LE(log.disk_bytes(), 2 * log.live_bytes() + 3 * f.opts.segment_bytes + 512) << "round " << round;
    }
  }
};

std::set<std::uint32_t> numbers_on_disk(storage::env& env, const std::string& infix) {
  std::set<std::uint32_t> out;
  auto names = env.list_dir("/data/raft");
  EXPECT_TRUE(names.has_value());
  const std::string prefix = "node.log" + infix;
  for (const auto& n : *names)
    if (n.size() == prefix.size() + 8 && n.starts_with(prefix) &&
        std::isdigit(static_cast<unsigned char>(n.back())))
      out.insert(static_cast<std::uint32_t>(std::stoul(n.substr(prefix.size()))));
  return out;
}

TEST(raft_node_log_places, compaction_renames_the_segments_the_caller_keeps) {
  fixture f(2, node_log_options{1024});
  place_watch w{f.env, log_path};
  std::vector<std::uint32_t> asked;
  std::set<std::uint32_t> kept_expected;
  std::set<std::uint32_t> unlinked_expected;
  {
    auto log = f.open();
    w.attach(*log);
    // Odd segments are kept, even ones unlinked.
    log->set_keep([&](std::uint32_t no) {
      asked.push_back(no);
      (no % 2 ? kept_expected : unlinked_expected).insert(no);
      return no % 2 == 1;
    });
    churn c{w};
    c.quiet(*log);
    ASSERT_NO_FATAL_FAILURE(c.run(f, *log, 150));
    ASSERT_GE(kept_expected.size(), 3u);
    ASSERT_GE(unlinked_expected.size(), 3u);
    EXPECT_EQ(std::set<std::uint32_t>(asked.begin(), asked.end()).size(), asked.size()) << "asked twice";
    EXPECT_EQ(log->segments_deleted(), asked.size());
    const std::vector<std::uint32_t> kept_list = log->kept_segments();
    EXPECT_EQ(std::set<std::uint32_t>(kept_list.begin(), kept_list.end()), kept_expected);
    EXPECT_EQ(numbers_on_disk(f.env, ".kept."), kept_expected);
    std::uint64_t kept_size = 0;
    for (std::uint32_t no : kept_expected) {
      EXPECT_FALSE(f.env.file_exists(seg(no))) << no;
      kept_size += f.env.contents(node_log::kept_segment_path(log_path, no))->size();
    }
    for (std::uint32_t no : unlinked_expected) {
      EXPECT_FALSE(f.env.file_exists(seg(no))) << no;
      EXPECT_FALSE(f.env.file_exists(node_log::kept_segment_path(log_path, no))) << no;
    }
    EXPECT_EQ(log->kept_bytes(), kept_size);
    // Kept segments are not the log's: its disk bytes are its live segments, the kept ones apart.
    EXPECT_EQ(f.env.used_bytes(), log->disk_bytes() + log->kept_bytes());
    // Every place ever reported into a segment since kept still reads back (under the kept name), the
    // quiet entries' first places included.
    std::uint64_t in_kept = 0;
    for (const auto& [key, p] : w.all) {
      if (unlinked_expected.contains(p.segment)) continue;
      in_kept += kept_expected.contains(p.segment);
      auto got = read_place(f.env, log_path, p);
      ASSERT_TRUE(got.has_value()) << got.err().reason;
      EXPECT_TRUE(w.written[key].contains(got->data));
    }
    EXPECT_GT(in_kept, 10u);
    EXPECT_TRUE(holds(f.env, log_path, w.all[1].second, "quiet two"));
    EXPECT_EQ(w.all[1].second.segment, 1u);
    // Idle, nothing more happens: the kept bytes do not call for another pass.
    const std::uint64_t written = log->bytes_written();
    const std::uint64_t deleted = log->segments_deleted();
    f.sched.run_until(f.sched.now_ms() + 1000);
    log->flush();
    f.sched.run_until(f.sched.now_ms() + 1000);
    EXPECT_FALSE(log->compacting());
    EXPECT_EQ(log->bytes_written(), written);
    EXPECT_EQ(log->segments_deleted(), deleted);
  }
  // The log reopens over its live segments (consecutive), ignores the kept ones and knows them.
  auto log = f.open();
  ASSERT_TRUE(log);
  const std::vector<std::uint32_t> kept_list = log->kept_segments();
  EXPECT_EQ(std::set<std::uint32_t>(kept_list.begin(), kept_list.end()), kept_expected);
  const group_state quiet = log->take_group_state(group_id(0));
  ASSERT_EQ(quiet.entries.size(), 2u);
  EXPECT_EQ(text(quiet.entries[1].data), "quiet two");
  EXPECT_FALSE(kept_expected.contains(quiet.places[1].segment));  // carried out of segment 1
  EXPECT_GT(*numbers_on_disk(f.env, ".").begin(), *kept_expected.rbegin());
}

// A log closed while a compaction pass was about to delete segments compacts them again at open(),
// before its caller could call set_keep: the keep predicate of its options is asked then.
TEST(raft_node_log_places, a_compaction_at_open_asks_the_keep_of_the_options) {
  fixture f(4, node_log_options{1024});
  std::vector<wire::entry> scratch;
  std::uint64_t next = 1;
  {
    auto log = f.open();
    for (int i = 0; i < 40; ++i) {  // every entry live: no compaction while they are written
      log->add(entries_of(1, next++, {fmt::format("entry {} {}", i, std::string(100, 'x'))}, scratch));
      f.settle(*log);
    }
    ASSERT_GE(log->segments(), 4u);
    // An installed snapshot (trailing 0) leaves no entry live: once it is synced, the old segments go.
    log->add(snapshot_of(1, next - 1, 0));
    log->flush();
    const std::uint64_t target = log->open_batch() - 1;
    while (log->synced_batch() < target && f.sched.run_one()) {
    }
    ASSERT_EQ(log->synced_batch(), target);
    ASSERT_TRUE(log->compacting());  // the deletion is queued, not done
    f.crash(std::nullopt);           // and never runs
  }
  const std::set<std::uint32_t> before = numbers_on_disk(f.env, ".");
  ASSERT_GE(before.size(), 5u);
  std::vector<std::uint32_t> asked;
  f.opts.keep = [&](std::uint32_t no) {
    asked.push_back(no);
    return true;
  };
  auto log = f.open();
  ASSERT_TRUE(log);
  f.settle(*log);
  ASSERT_FALSE(asked.empty());
  for (std::uint32_t no : asked) {
    EXPECT_TRUE(before.contains(no)) << no;
    EXPECT_TRUE(f.env.file_exists(node_log::kept_segment_path(log_path, no))) << no;
  }
  const std::vector<std::uint32_t> kept = log->kept_segments();
  EXPECT_EQ(std::set<std::uint32_t>(kept.begin(), kept.end()),
            std::set<std::uint32_t>(asked.begin(), asked.end()));
}

// A log that kept every segment compaction was done with, after `rounds` of churn (its quiet entries first).
std::unique_ptr<node_log> churned_keeping_all(fixture& f, place_watch& w, int rounds) {
  auto log = f.open();
  w.attach(*log);
  log->set_keep([](std::uint32_t) { return true; });
  churn c{w};
  c.quiet(*log);
  c.run(f, *log, rounds);
  return log;
}

// A log whose live segments are all gone but whose kept ones are still there (the raft state wiped, the
// stream data kept): the new segment is numbered above every kept one, never reusing a number a place
// names.
TEST(raft_node_log_places, a_new_segment_is_numbered_above_every_kept_one) {
  fixture f(3, node_log_options{1024});
  place_watch w{f.env, log_path};
  {
    auto log = churned_keeping_all(f, w, 60);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    ASSERT_GE(log->kept_segments().size(), 3u);
  }
  const std::set<std::uint32_t> kept = numbers_on_disk(f.env, ".kept.");
  ASSERT_TRUE(kept.contains(1));
  for (std::uint32_t no : numbers_on_disk(f.env, ".")) ASSERT_TRUE(f.env.remove_file(seg(no)).has_value());
  auto log = f.open();
  ASSERT_TRUE(log);
  EXPECT_EQ(log->segments(), 1u);
  EXPECT_EQ(numbers_on_disk(f.env, "."), std::set<std::uint32_t>{*kept.rbegin() + 1});
  const std::vector<std::uint32_t> kept_list = log->kept_segments();
  EXPECT_EQ(std::set<std::uint32_t>(kept_list.begin(), kept_list.end()), kept);
}

TEST(raft_node_log_places, drop_kept_unlinks_exactly_the_ones_no_longer_needed) {
  fixture f(4, node_log_options{1024});
  place_watch w{f.env, log_path};
  auto log = churned_keeping_all(f, w, 80);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  const std::vector<std::uint32_t> kept = log->kept_segments();
  ASSERT_GE(kept.size(), 4u);
  // Needed: every third one. One of the others was removed by hand already.
  std::set<std::uint32_t> needed;
  for (std::size_t k = 0; k < kept.size(); k += 3) needed.insert(kept[k]);
  ASSERT_TRUE(f.env.remove_file(node_log::kept_segment_path(log_path, kept[1])).has_value());
  const std::uint64_t reclaimed = log->bytes_reclaimed();
  EXPECT_EQ(reclaimed, 0u);  // every segment taken out of the log was kept: no byte freed yet
  const std::uint64_t kept_bytes = log->kept_bytes();
  std::uint64_t needed_bytes = 0;
  for (std::uint32_t no : needed)
    needed_bytes += f.env.contents(node_log::kept_segment_path(log_path, no))->size();
  std::vector<std::uint32_t> asked;
  std::optional<status> done;
  log->drop_kept(
      [&](std::uint32_t no) {
        asked.push_back(no);
        return needed.contains(no);
      },
      [&](status st) { done = st; });
  EXPECT_EQ(asked, kept);          // asked at once, on the executor
  EXPECT_FALSE(done.has_value());  // the unlinks run on the flusher
  while (!done) ASSERT_TRUE(f.sched.run_one());
  ASSERT_TRUE(done->has_value()) << done->err().reason;
  const std::vector<std::uint32_t> left = log->kept_segments();
  EXPECT_EQ(std::set<std::uint32_t>(left.begin(), left.end()), needed);
  EXPECT_EQ(numbers_on_disk(f.env, ".kept."), needed);
  EXPECT_EQ(log->kept_bytes(), needed_bytes);
  EXPECT_EQ(log->bytes_reclaimed() - reclaimed, kept_bytes - needed_bytes);
  // And once nothing is needed, none is left.
  done.reset();
  log->drop_kept({}, [&](status st) { done = st; });
  while (!done) ASSERT_TRUE(f.sched.run_one());
  EXPECT_TRUE(done->has_value());
  EXPECT_TRUE(log->kept_segments().empty());
  EXPECT_EQ(log->kept_bytes(), 0u);
  EXPECT_TRUE(numbers_on_disk(f.env, ".kept.").empty());
}

TEST(raft_node_log_places, the_version_1_file_is_never_kept) {
  fixture f(5, node_log_options{1024});
  std::vector<std::byte> file;
  byte_writer bw(file);
  bw.text("weirraft");
  bw.u32(1);
  bw.u32(storage::crc32c(file));
  record::encode_record({group_id(4), record::term{term_id(3)}}, file);
  ASSERT_TRUE(f.env.create_dirs("/data/raft").has_value());
  f.env.set_contents(log_path, file);
  place_watch w{f.env, log_path};
  auto log = f.open();
  w.attach(*log);
  std::vector<std::uint32_t> asked;
  log->set_keep([&](std::uint32_t no) {
    asked.push_back(no);
    return true;
  });
  churn c{w};
  ASSERT_NO_FATAL_FAILURE(c.run(f, *log, 60));
  EXPECT_FALSE(f.env.file_exists(log_path));
  EXPECT_FALSE(f.env.file_exists(node_log::kept_segment_path(log_path, 0)));
  EXPECT_FALSE(asked.empty());
  EXPECT_EQ(std::count(asked.begin(), asked.end(), 0u), 0);
  EXPECT_FALSE(numbers_on_disk(f.env, ".kept.").contains(0));
}

// On a real disk through the thread_flusher: a reader that opened a segment before compaction renamed it
// to its kept name still reads it through its open file, and the kept file holds the same bytes.
TEST(raft_node_log_places, a_reader_keeps_reading_a_segment_renamed_to_kept) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "weir-node-log-places-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  // Removed however the test ends (an ASSERT returns early).
  auto remove_dir = [](std::string* d) { std::filesystem::remove_all(*d); };
  std::unique_ptr<std::string, decltype(remove_dir)> cleanup(&tmpl, remove_dir);
  const std::string path = tmpl + "/raft/node.log";
  storage::env& env = storage::default_posix_env();
  test_support::posted_loop loop;
  {
    auto flusher = std::make_unique<thread_flusher>(loop.poster());
    auto l = node_log::open(env, *flusher, path, node_log_options{4096});
    ASSERT_TRUE(l.has_value()) << l.err().reason;
    auto log = std::move(l).value();
    place_watch w{env, path};
    w.attach(*log);
    log->set_keep([](std::uint32_t) { return true; });
    w.add(*log, 0, 1, {"quiet"});
    log->flush();
    for (int i = 0; i < 100 && log->flushing(); ++i) loop.run_posted();
    ASSERT_FALSE(log->flushing());
    const entry_place first = w.at(0, 1);
    ASSERT_EQ(first.segment, 1u);
    auto reader = env.open_readable(node_log::segment_path(path, 1));
    ASSERT_TRUE(reader.has_value());
    std::uint64_t next = 1;
    for (int round = 0; round < 200 && !env.file_exists(node_log::kept_segment_path(path, 1)); ++round) {
      w.add(*log, 1, next, {std::string(200, char('a' + round % 26))});
      log->add(snapshot_of(1, next, 1));
      ++next;
      log->flush();
      for (int i = 0; i < 100 && (log->flushing() || log->compacting()); ++i) loop.run_posted();
    }
    ASSERT_TRUE(env.file_exists(node_log::kept_segment_path(path, 1)));
    EXPECT_FALSE(env.file_exists(node_log::segment_path(path, 1)));
    EXPECT_TRUE(w.queue.empty());
    // Through the file opened before the rename, and under the kept name.
    std::string got(5, '\0');
    auto n = (*reader)->read(first.record_offset + record::record_header_size + first.data_offset,
                             std::as_writable_bytes(std::span<char>(got.data(), got.size())));
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(*n, 5u);
    EXPECT_EQ(got, "quiet");
    EXPECT_TRUE(holds(env, path, first, "quiet"));
    EXPECT_NE(w.at(0, 1).segment, 1u);  // carried forward, and reported at its new place
    EXPECT_TRUE(holds(env, path, w.at(0, 1), "quiet"));
    std::uint64_t on_disk = 0;
    for (const auto& e : std::filesystem::directory_iterator(tmpl + "/raft"))
      if (e.path().filename().string().find(".kept.") == std::string::npos) on_disk += e.file_size();
    EXPECT_EQ(on_disk, log->disk_bytes());
    flusher.reset();  // before the log whose files it writes (thread_flusher.h)
  }
  loop.run_posted();
}

}  // namespace
}  // namespace weir::raft
