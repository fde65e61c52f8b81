// data_log: a cluster node's stream data on disk. Records are located once written, admitted to the hot
// tier (and so evictable) only once a sync completed after them, durable() follows the syncs, a crash
// keeps what was synced, reclaim deletes the segments nothing references (pins included), and records
// restored with inline bytes are written and leave memory like the others. Wired as stream_shard wires
// it: a state machine, a hot tier reading the data log's segments.
#include "tier/data_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>

#include "storage/log_format.h"
#include "storage/mem_env.h"
#include "tier/hot_tier.h"
#include "unit/storage/test_util.h"
#include "unit/streams/command_builders.h"

namespace weir::tier {
namespace {

using streams::testing::make_append;
using streams::testing::make_create;

const std::string dir = "/node/data";

std::string pattern(std::size_t n, int salt) {
  std::string s(n, ' ');
  for (std::size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>('a' + (i * 7 + static_cast<std::size_t>(salt)) % 26);
  return s;
}

struct data_log_test : ::testing::Test {
  storage::mem_env mem;
  storage::testing::completion_queue q;
  streams::state_machine sm;
  std::unique_ptr<storage::segment_reader> reader;
  std::unique_ptr<hot_tier> hot;
  std::unique_ptr<data_log> log;
  std::size_t located = 0, admitted = 0;
  std::vector<std::uint64_t> extra_referenced;  // besides the state machine's
  storage::disk_worker* worker = nullptr;       // null: the writer's own threads

  void open(data_log_options o, std::size_t budget = 1 << 20) {
    log.reset();
    reader = std::make_unique<storage::segment_reader>(mem, dir);
    hot = std::make_unique<hot_tier>(budget, std::vector<storage::segment_reader*>{reader.get()});
    data_log::hooks h;
    h.locate = [this](std::uint64_t g, std::uint64_t end, const streams::disk_location& at) {
      ++located;
      return sm.locate(g, end, at);
    };
    h.admit = [this](std::uint64_t g, std::uint64_t end, std::uint32_t size,
                     const streams::disk_location& at) {
      ++admitted;
      hot->admit(sm, g, end, size, at);
    };
    h.referenced = [this] {
      auto r = sm.referenced_segments(0);
      r.insert(r.end(), extra_referenced.begin(), extra_referenced.end());
      return r;
    };
    auto d = data_log::open(mem, dir, o, q.exec(), reader.get(), std::move(h), worker);
    ASSERT_TRUE(d) << d.err().reason;
    log = std::move(*d);
  }

  // Applies `c` as replica::raft_lane::apply_committed does and writes its record.
  streams::outcome apply(const streams::command& c) {
    streams::outcome o = sm.apply(c);
    EXPECT_EQ(o.code, streams::errc::ok);
    if (o.code == streams::errc::ok && o.mutated && o.meta)
      log->write(c, o.meta->generation, o.meta->tail.value());
    return o;
  }

  // Creates `path` with one record and appends n - 1 more, each of `size` bytes (pattern); their bytes.
  std::string create_and_append(const std::string& path, int n, std::size_t size) {
    std::string expected = pattern(size, 0);
    apply(make_create(path, "text/plain", expected));
    for (int i = 1; i < n; ++i) {
      std::string body = pattern(size, i);
      expected += body;
      apply(make_append(path, body));
    }
    return expected;
  }

  void sync() {
    const std::uint64_t before = log->stats().syncs;
    log->sync_now();
    ASSERT_TRUE(q.run_until([&] { return log->stats().syncs > before; }));
  }

  std::string read_all(const std::string& path) {
    std::string out;
    std::optional<streams::stream_offset> from;
    for (;;) {
      streams::read_result rr = sm.read(path, from, 1 << 20);
      EXPECT_EQ(rr.code, streams::errc::ok);
      status st = hot->resolve(rr.plan);
      EXPECT_TRUE(st) << st.err().reason;
      for (const auto& s : rr.plan.slices) out.append(s.view());
      if (rr.plan.bytes == 0 || rr.plan.up_to_date) return out;
      from = rr.plan.next;
    }
  }
};

TEST_F(data_log_test, records_are_located_when_written_and_evictable_once_synced) {
  data_log_options o;
  o.sync_bytes = 1ull << 30;  // only explicit syncs
  open(o, /*budget=*/1000);
  const std::string expected = create_and_append("/s", 20, 300);
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 20; }));
  EXPECT_EQ(located, 20u);
  EXPECT_EQ(admitted, 0u);  // not synced: nothing may leave memory
  EXPECT_EQ(hot->evicted(), 0u);
  EXPECT_EQ(log->stats().unsynced_bytes, 6000u);
  // Located, not synced: a snapshot must not reference them.
  std::vector<streams::disk_location> places;
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { places.push_back(r.data.at); });
  ASSERT_EQ(places.size(), 20u);
  for (const auto& at : places) {
    EXPECT_TRUE(at.known());
    EXPECT_FALSE(log->durable(at));
  }

  sync();
  EXPECT_EQ(admitted, 20u);
  EXPECT_EQ(log->stats().unsynced_bytes, 0u);
  for (const auto& at : places) EXPECT_TRUE(log->durable(at));
  EXPECT_LE(hot->bytes(), 1000u);
  EXPECT_GE(hot->evicted(), 16u);
  EXPECT_EQ(read_all("/s"), expected);  // cold records come back from the data log
}

// One hand-over per loop turn: the records a turn applies reach the writer together, from one posted
// task, so that its thread is woken once per turn rather than once per entry (docs/benchmarks.md,
// "Cluster write path: data-log hand-over batching"); they keep their order. A turn's records beyond
// hand_over_bytes go at once.
TEST_F(data_log_test, a_turns_records_reach_the_writer_together_at_its_end_in_order) {
  data_log_options o;
  o.sync_bytes = 1ull << 30;
  open(o);
  const std::size_t posted_before = q.posted();
  const std::string expected = create_and_append("/s", 10, 100);
  // Nothing is with the writer yet: the turn's one task hands them over.
  EXPECT_EQ(log->stats().log.records, 0u);
  EXPECT_EQ(q.posted(), posted_before + 1);
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 10; }));
  EXPECT_EQ(located, 10u);
  std::vector<streams::disk_location> at;
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { at.push_back(r.data.at); });
  ASSERT_EQ(at.size(), 10u);
  for (std::size_t i = 1; i < at.size(); ++i) {
    EXPECT_EQ(at[i].segment, at[0].segment);
    EXPECT_GT(at[i].offset, at[i - 1].offset) << i;  // written in the order applied
  }
  EXPECT_EQ(read_all("/s"), expected);

  // A large record goes without waiting for the turn's end (and takes the smaller ones before it along).
  const std::size_t posted_mid = q.posted();
  const std::string big = pattern(1200 << 10, 42);
  apply(make_append("/s", pattern(100, 11)));
  EXPECT_EQ(q.posted(), posted_mid + 1);  // the turn's hand-over, posted
  apply(make_append("/s", big));          // handed over at once, with the one before it
  ASSERT_TRUE(q.run_until([&] { return log->stats().log.records == 12; }));
  q.run_ready();  // the posted hand-over finds nothing left
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 12; }));
  EXPECT_EQ(log->stats().log.records, 12u);
}

// With hand_over_bytes (the server's setting), records wait in the queue until that many bytes are
// queued, the next tick or a sync: below it, running the loop hands nothing over.
TEST_F(data_log_test, with_a_hand_over_size_records_go_in_batches_at_the_size_a_tick_or_a_sync) {
  data_log_options o;
  o.sync_bytes = 1ull << 30;
  o.hand_over_bytes = 1000;
  open(o);
  std::string expected = create_and_append("/s", 3, 300);
  q.run_ready();
  EXPECT_EQ(log->stats().log.records, 0u);  // 3 records of 300 bytes (and their headers): under 1000
  EXPECT_EQ(located, 0u);
  EXPECT_EQ(log->unsynced_bytes(), 900u);     // queued bytes are not synced either
  apply(make_append("/s", pattern(300, 3)));  // past 1000 bytes: the four go together
  expected += pattern(300, 3);
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 4; }));
  EXPECT_EQ(log->stats().log.records, 4u);
  EXPECT_EQ(located, 4u);

  // A tick hands over what is queued.
  apply(make_append("/s", pattern(300, 4)));
  expected += pattern(300, 4);
  q.run_ready();
  EXPECT_EQ(log->stats().log.records, 4u);
  log->tick(1);
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 5; }));

  // So does a sync, which the next sync then covers: every record is admitted after two.
  apply(make_append("/s", pattern(300, 5)));
  expected += pattern(300, 5);
  sync();
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 6; }));
  sync();
  EXPECT_EQ(admitted, 6u);
  EXPECT_EQ(read_all("/s"), expected);
}

TEST_F(data_log_test, unsynced_bytes_beyond_the_threshold_start_a_sync) {
  data_log_options o;
  o.sync_bytes = 1000;
  open(o, /*budget=*/500);
  apply(make_create("/s", "text/plain"));
  for (int i = 0; i < 10; ++i) apply(make_append("/s", pattern(400, i)));
  // No tick: the threshold alone starts syncs, until less than it is left unsynced.
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 10 && log->stats().unsynced_bytes < 1000; }));
  EXPECT_GE(log->stats().syncs, 1u);
  EXPECT_GE(admitted, 8u);
  EXPECT_LE(hot->bytes(), 500u);
}

TEST_F(data_log_test, tick_syncs_after_the_interval) {
  data_log_options o;
  o.sync_bytes = 1ull << 30;
  o.sync_interval_ms = 1000;
  open(o);
  log->tick(10'000);
  apply(make_create("/s", "text/plain", "abc"));
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 1; }));
  log->tick(10'500);  // too soon after the last one
  q.run_ready();
  EXPECT_EQ(log->stats().syncs, 0u);
  log->tick(11'000);
  ASSERT_TRUE(q.run_until([&] { return log->stats().syncs == 1; }));
  EXPECT_EQ(admitted, 1u);
}

TEST_F(data_log_test, a_crash_keeps_what_was_synced_and_writing_continues_after_it) {
  data_log_options o;
  o.sync_bytes = 1ull << 30;
  open(o);
  const std::string body = pattern(100, 3);
  apply(make_create("/s", "text/plain", body));
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 1; }));
  sync();
  streams::disk_location synced_at;
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { synced_at = r.data.at; });
  apply(make_append("/s", pattern(100, 4)));  // written, never synced
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 2; }));
  streams::disk_location lost_at;
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { lost_at = r.data.at; });
  mem.crash();
  log.reset();
  mem.restart();

  open(o);
  // Recovery found the synced record: it is durable; it reads back.
  EXPECT_TRUE(log->durable(synced_at));
  auto got =
      reader->read_data(storage::log_position{storage::segment_id{synced_at.segment}, synced_at.offset},
                        synced_at.data_offset, body.size());
  ASSERT_TRUE(got) << got.err().reason;
  EXPECT_EQ(*got, body);
  EXPECT_FALSE(log->durable(lost_at));
  EXPECT_FALSE(
      reader->read_record(storage::log_position{storage::segment_id{lost_at.segment}, lost_at.offset}));
  // Appends continue after it.
  apply(make_append("/s", "more"));
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 1; }));
  streams::disk_location next;
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { next = r.data.at; });
  EXPECT_TRUE(next.segment > synced_at.segment ||
              (next.segment == synced_at.segment && next.offset > synced_at.offset));
  EXPECT_FALSE(log->durable(next));
}

// The writer's disk work as tasks (storage::disk_worker), which this test runs one by one as the
// simulation's scheduler does: nothing reaches the files before its task runs, a sync is two tasks (the
// request, then the fdatasync), and a crash between them keeps only what an earlier sync covered.
struct held_worker final : storage::disk_worker {
  std::deque<std::function<void()>> tasks;
  void run(std::function<void()> work) override { tasks.push_back(std::move(work)); }
  bool step() {
    if (tasks.empty()) return false;
    auto t = std::move(tasks.front());
    tasks.pop_front();
    t();
    return true;
  }
};

TEST_F(data_log_test, with_a_disk_worker_the_disk_changes_only_when_its_tasks_run) {
  held_worker w;
  worker = &w;
  data_log_options o;
  o.sync_bytes = 1ull << 30;
  open(o, /*budget=*/100);
  const std::string body = pattern(300, 1);
  apply(make_create("/s", "text/plain", body));
  const std::uint64_t appends_before = mem.append_count();
  q.run_ready();  // the turn's hand-over: one task for the worker, nothing written yet
  ASSERT_EQ(w.tasks.size(), 1u);
  EXPECT_EQ(mem.append_count(), appends_before);
  EXPECT_EQ(located, 0u);
  ASSERT_TRUE(w.step());
  EXPECT_GT(mem.append_count(), appends_before);
  q.run_ready();
  EXPECT_EQ(located, 1u);
  EXPECT_EQ(admitted, 0u);
  streams::disk_location first;
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { first = r.data.at; });

  log->sync_now();
  ASSERT_TRUE(w.step());  // the request: hands the fdatasync over as a task of its own
  q.run_ready();
  EXPECT_EQ(log->stats().syncs, 0u);
  const std::uint64_t syncs_before = mem.sync_count();
  ASSERT_TRUE(w.step());
  EXPECT_EQ(mem.sync_count(), syncs_before + 1);
  q.run_ready();
  EXPECT_EQ(log->stats().syncs, 1u);
  EXPECT_EQ(admitted, 1u);
  EXPECT_TRUE(log->durable(first));
  EXPECT_FALSE(w.step());  // nothing else was handed over

  apply(make_append("/s", pattern(300, 2)));
  q.run_ready();
  ASSERT_TRUE(w.step());
  q.run_ready();
  EXPECT_EQ(located, 2u);
  streams::disk_location second;
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { second = r.data.at; });
  log->sync_now();
  ASSERT_TRUE(w.step());  // the fdatasync's task is queued, and never runs before the crash
  EXPECT_EQ(w.tasks.size(), 1u);
  mem.crash();
  log.reset();
  while (w.step()) {
  }  // tasks of a writer that is gone do nothing
  mem.restart();

  open(o);
  EXPECT_TRUE(log->durable(first));
  EXPECT_FALSE(log->durable(second));
  auto got = reader->read_data(storage::log_position{storage::segment_id{first.segment}, first.offset},
                               first.data_offset, body.size());
  ASSERT_TRUE(got) << got.err().reason;
  EXPECT_EQ(*got, body);
  EXPECT_FALSE(
      reader->read_record(storage::log_position{storage::segment_id{second.segment}, second.offset}));
}

// A record written twice before a sync (at its apply, and again after a snapshot restored it inline:
// partition::persist_unlocated) is admitted at its newest copy only. Admitting the older copy would point
// the record back at it, and a reclaim may already have deleted that copy's segment (the simulation
// found it: tests/unit/cluster/lane_sim.h).
TEST_F(data_log_test, a_record_written_twice_before_a_sync_is_admitted_at_its_newest_copy_only) {
  held_worker w;
  worker = &w;
  data_log_options o;
  o.sync_bytes = 1ull << 30;
  open(o);
  const streams::outcome made = apply(make_create("/s", "text/plain", pattern(100, 1)));
  q.run_ready();
  ASSERT_TRUE(w.step());
  q.run_ready();
  streams::record rec;
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { rec = r; });
  const streams::disk_location first = rec.data.at;
  ASSERT_TRUE(first.known());

  log->sync_now();                                      // covers the first copy only
  log->write_record("/s", made.meta->generation, rec);  // the second copy, written before that sync ends
  q.run_ready();
  ASSERT_TRUE(w.step());  // the second copy's write, then the sync's request
  q.run_ready();
  streams::disk_location second;
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { second = r.data.at; });
  ASSERT_GT(second.offset, first.offset);
  ASSERT_TRUE(w.step());  // the fdatasync
  q.run_ready();
  EXPECT_EQ(log->stats().syncs, 1u);
  EXPECT_EQ(admitted, 0u);  // the older copy is not admitted
  streams::disk_location now;
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { now = r.data.at; });
  EXPECT_EQ(now.offset, second.offset);  // the record still points at its newest copy

  log->sync_now();
  while (w.step()) q.run_ready();
  q.run_ready();
  EXPECT_EQ(admitted, 1u);
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { now = r.data.at; });
  EXPECT_EQ(now.offset, second.offset);
}

TEST_F(data_log_test, reclaim_deletes_segments_nothing_references_and_keeps_pinned_ones) {
  data_log_options o;
  o.segment_bytes = 4096;
  o.sync_bytes = 1ull << 30;
  o.reclaim_bytes = 1ull << 40;  // only by time
  o.reclaim_interval_ms = 1000;
  open(o, /*budget=*/1 << 20);
  apply(make_create("/keep", "text/plain", pattern(1000, 1)));
  apply(make_create("/gone", "text/plain"));
  for (int i = 0; i < 12; ++i) apply(make_append("/gone", pattern(1000, i)));
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 13; }));
  sync();
  std::vector<std::uint64_t> keep_segments;
  sm.log_of("/keep")->for_each_record(
      [&](const streams::record& r) { keep_segments.push_back(r.data.at.segment); });
  std::vector<std::uint64_t> gone_segments;
  sm.log_of("/gone")->for_each_record(
      [&](const streams::record& r) { gone_segments.push_back(r.data.at.segment); });
  ASSERT_GE(gone_segments.back() - gone_segments.front(), 2u);
  const std::uint64_t pinned = gone_segments[gone_segments.size() / 2];
  log->pin(7, {pinned});
  // /gone is deleted: its segments are garbage, except the pinned one (a snapshot still references it).
  ASSERT_EQ(sm.apply(streams::delete_command{"/gone", streams::testing::t0, 0}).code, streams::errc::ok);
  apply(make_append("/keep", "x"));  // something written since the last reclaim
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 14; }));
  const std::uint64_t segments_before = log->stats().log.segments;
  log->tick(100'000);
  ASSERT_TRUE(q.run_until([&] { return log->stats().reclaims == 1; }));
  EXPECT_GT(log->stats().segments_removed, 0u);
  EXPECT_EQ(log->stats().log.segments, segments_before - log->stats().segments_removed);
  const auto files = mem.list_dir(dir);
  ASSERT_TRUE(files);
  auto present = [&](std::uint64_t id) {
    return std::find(files->begin(), files->end(),
                     storage::format::segment_file_name(storage::segment_id{id})) != files->end();
  };
  for (std::uint64_t s : keep_segments) EXPECT_TRUE(present(s)) << s;
  EXPECT_TRUE(present(pinned));
  // /gone's segments that hold nothing else (not the first: /keep's record is there; not the last:
  // the active segment stays).
  std::size_t removed = 0;
  for (std::uint64_t g : gone_segments) {
    if (g == pinned || g == gone_segments.front() || g == gone_segments.back()) continue;
    EXPECT_FALSE(present(g)) << g;
    ++removed;
  }
  EXPECT_GE(removed, 1u);
  EXPECT_EQ(read_all("/keep"), pattern(1000, 1) + "x");

  // Unpinned (the group's next snapshot references nothing there): the next reclaim takes it.
  log->pin(7, {});
  log->tick(200'000);
  ASSERT_TRUE(q.run_until([&] { return log->stats().reclaims == 2; }));
  const auto after = mem.list_dir(dir);
  ASSERT_TRUE(after);
  EXPECT_EQ(std::count(after->begin(), after->end(),
                       storage::format::segment_file_name(storage::segment_id{pinned})),
            0);
}

TEST_F(data_log_test, records_restored_inline_are_written_and_leave_memory) {
  data_log_options o;
  o.sync_bytes = 1ull << 30;
  open(o, /*budget=*/100);
  // A state as a snapshot restore leaves it: records in memory, no location.
  ASSERT_EQ(sm.apply(make_create("/r", "text/plain", pattern(200, 1))).code, streams::errc::ok);
  ASSERT_EQ(sm.apply(make_append("/r", pattern(200, 2))).code, streams::errc::ok);
  std::size_t unlocated = 0;
  sm.for_each_unlocated([&](std::string_view path, std::uint64_t generation, const streams::record& r) {
    EXPECT_EQ(path, "/r");
    ++unlocated;
    log->write_record(path, generation, r);
  });
  EXPECT_EQ(unlocated, 2u);
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 2; }));
  sync();
  unlocated = 0;
  sm.for_each_unlocated([&](std::string_view, std::uint64_t, const streams::record&) { ++unlocated; });
  EXPECT_EQ(unlocated, 0u);
  EXPECT_GE(hot->evicted(), 1u);
  EXPECT_EQ(read_all("/r"), pattern(200, 1) + pattern(200, 2));
}

TEST_F(data_log_test, raw_records_of_a_transfer_are_pinned_until_unpinned_and_readable_where_reported) {
  data_log_options o;
  o.segment_bytes = 4096;
  o.sync_bytes = 1ull << 30;
  o.reclaim_bytes = 1ull << 40;  // only by time
  o.reclaim_interval_ms = 1000;
  open(o);
  // Records a peer's snapshot references, copied here (snapshot_transfer.h): none is in the state.
  std::vector<streams::disk_location> at;
  for (int i = 0; i < 10; ++i) {
    log->write_raw(42, pattern(1000, i), [&](result<streams::disk_location> r) {
      ASSERT_TRUE(r) << r.err().reason;
      at.push_back(*r);
    });
  }
  ASSERT_TRUE(q.run_until([&] { return at.size() == 10; }));
  EXPECT_EQ(admitted, 0u);  // nothing of the state's
  EXPECT_FALSE(log->durable(at.back()));
  bool durable = false;
  log->when_durable(at.back(), [&] { durable = true; });  // starts a sync
  ASSERT_TRUE(q.run_until([&] { return durable; }));
  EXPECT_TRUE(log->durable(at.back()));
  EXPECT_EQ(admitted, 0u);
  // Already durable: called (posted) at once.
  bool again = false;
  log->when_durable(at.front(), [&] { again = true; });
  EXPECT_FALSE(again);
  ASSERT_TRUE(q.run_until([&] { return again; }));
  // Each copy reads back at its place: the bytes start at data_offset.
  for (int i = 0; i < 10; ++i) {
    streams::chunk_slice s;
    s.at = at[static_cast<std::size_t>(i)];
    s.size = 1000;
    auto b = hot->bytes_of(s);
    ASSERT_TRUE(b) << b.err().reason;
    EXPECT_EQ(*b, pattern(1000, i));
  }
  ASSERT_GE(at.back().segment - at.front().segment, 2u);
  // Reclaim keeps the transfer's segments while it is pinned (the state references none of them) ...
  apply(make_create("/other", "text/plain", "x"));
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 11; }));
  log->tick(100'000);
  ASSERT_TRUE(q.run_until([&] { return log->stats().reclaims == 1; }));
  EXPECT_EQ(log->stats().segments_removed, 0u);
  // ... and deletes them once unpinned (a restore pinned what its state references instead).
  log->unpin_transfer(42);
  log->tick(200'000);
  ASSERT_TRUE(q.run_until([&] { return log->stats().reclaims == 2; }));
  EXPECT_GT(log->stats().segments_removed, 0u);
  streams::chunk_slice first;
  first.at = at.front();
  first.size = 1000;
  reader->forget(storage::segment_id{at.front().segment});
  EXPECT_FALSE(hot->bytes_of(first).has_value());
}

// A copy written and not synced yet stays on disk until its sync, even when a snapshot restored since
// points the state at another copy (a transfer's, in a later segment): the sync's admission locates the
// record at the written copy again, so a reclaim in between must not delete its segment (the cold tier
// in the cluster simulation found it, tests/unit/cluster/lane_sim.h: a reclaim the cold mover asked for
// fell between a restore and the sync, and reads then met a missing segment).
TEST_F(data_log_test, a_copy_waiting_for_its_sync_keeps_its_segment_through_a_reclaim) {
  data_log_options o;
  o.segment_bytes = 4096;
  o.sync_bytes = 1ull << 30;
  o.sync_interval_ms = 1'000'000'000;  // syncs only when asked
  o.reclaim_bytes = 1ull << 40;        // reclaims only by time
  o.reclaim_interval_ms = 1000;
  open(o);
  const std::string body = pattern(1000, 1);
  const streams::outcome made = apply(make_create("/s", "text/plain", body));
  ASSERT_TRUE(q.run_until([&] { return log->stats().records == 1; }));
  streams::disk_location written;
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { written = r.data.at; });
  ASSERT_TRUE(written.known());
  // A transfer's copies, until one lands in a later segment than the written copy's.
  streams::disk_location transferred;
  for (int i = 0; i < 20 && transferred.segment <= written.segment + 1; ++i) {
    bool done = false;
    log->write_raw(42, body, [&](result<streams::disk_location> r) {
      ASSERT_TRUE(r) << r.err().reason;
      transferred = *r;
      done = true;
    });
    ASSERT_TRUE(q.run_until([&] { return done; }));
  }
  ASSERT_GT(transferred.segment, written.segment + 1);
  // The restore points the state at the transferred copy and pins what it references instead.
  ASSERT_TRUE(sm.locate(made.meta->generation, made.meta->tail.value(), transferred));
  log->unpin_transfer(42);
  apply(make_create("/other", "text/plain", "x"));  // something written since: the reclaim is due
  log->tick(100'000);
  ASSERT_TRUE(q.run_until([&] { return log->stats().reclaims == 1; }));
  const auto files = mem.list_dir(dir);
  ASSERT_TRUE(files);
  const bool kept =
      std::find(files->begin(), files->end(),
                storage::format::segment_file_name(storage::segment_id{written.segment})) != files->end();
  EXPECT_TRUE(kept) << "segment " << written.segment << " was deleted before its copy's sync";
  // The sync admits the written copy: the record points at it again, and reads back.
  sync();
  streams::disk_location now;
  sm.log_of("/s")->for_each_record([&](const streams::record& r) { now = r.data.at; });
  EXPECT_EQ(now.segment, written.segment);
  EXPECT_EQ(read_all("/s"), body);
  // Admitted: the next reclaim may take the segments nothing references any more.
  log->tick(200'000);
  ASSERT_TRUE(q.run_until([&] { return log->stats().reclaims == 2; }));
  EXPECT_GT(log->stats().segments_removed, 0u);
  EXPECT_EQ(read_all("/s"), body);
}

}  // namespace
}  // namespace weir::tier
