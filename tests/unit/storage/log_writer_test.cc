#include "storage/log_writer.h"

#include <functional>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "storage/log_format.h"
#include "storage/segment_reader.h"
#include "test_util.h"

namespace weir::storage {
namespace {

using testing::bytes_of;
using testing::completion_queue;
using testing::gated_env;
using testing::replayed;

constexpr const char* dir = "/data/core-0";

struct outcome {
  std::vector<result<append_ack>> acks;
  std::size_t done() const { return acks.size(); }
};

std::unique_ptr<log_writer> open_log(env& e, completion_queue& q, log_options opts = {}) {
  std::vector<replayed> ignored;
  auto rec = testing::recover_into(e, dir, ignored);
  EXPECT_TRUE(rec) << (rec ? "" : rec.err().reason);
  auto w = log_writer::open(e, dir, opts, *rec, q.exec());
  EXPECT_TRUE(w) << (w ? "" : w.err().reason);
  return std::move(*w);
}

void append_str(log_writer& w, std::string_view s, outcome& out, std::uint8_t type = 1) {
  w.append(type, bytes_of(s), [&out](result<append_ack> r) { out.acks.push_back(std::move(r)); });
}

std::vector<replayed> recover_all(env& e) {
  std::vector<replayed> out;
  auto rec = testing::recover_into(e, dir, out);
  EXPECT_TRUE(rec) << (rec ? "" : rec.err().reason);
  return out;
}

TEST(log_writer, appends_complete_in_order_and_survive_reopen) {
  mem_env e;
  completion_queue q;
  outcome out;
  {
    auto w = open_log(e, q);
    for (int i = 0; i < 20; ++i)
      append_str(*w, "cmd-" + std::to_string(i), out, static_cast<std::uint8_t>(1 + i % 3));
    ASSERT_TRUE(q.run_until([&] { return out.done() == 20; }));
  }
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(out.acks[i]) << out.acks[i].err().reason;
    EXPECT_EQ(out.acks[i]->seq, lsn{static_cast<std::uint64_t>(i + 1)});
  }
  e.crash();  // everything acknowledged was synced: nothing may be lost
  e.restart();
  auto got = recover_all(e);
  ASSERT_EQ(got.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(got[i].seq, lsn{static_cast<std::uint64_t>(i + 1)});
    EXPECT_EQ(got[i].payload, "cmd-" + std::to_string(i));
    EXPECT_EQ(got[i].type, 1 + i % 3);
    EXPECT_EQ(got[i].pos, out.acks[i]->pos);
  }
}

TEST(log_writer, group_commit_batches_appends_behind_an_inflight_sync) {
  mem_env inner;
  gated_env e(inner);
  completion_queue q;
  auto w = open_log(e, q);
  const auto syncs_before = w->stats().syncs;
  outcome out;

  e.close_gate();
  append_str(*w, "first", out);
  ASSERT_TRUE(e.wait_blocked(1));  // batch 1 (one record) is in fdatasync
  for (int i = 0; i < 99; ++i) append_str(*w, "queued-" + std::to_string(i), out);
  q.run_ready();
  EXPECT_EQ(out.done(), 0u) << "no completion before its batch is durable";

  e.release_one();  // batch 1 becomes durable; batch 2 (the 99 others) goes into the next fdatasync
  ASSERT_TRUE(q.run_until([&] { return out.done() == 1; }));
  ASSERT_TRUE(e.wait_blocked(1));
  q.run_ready();
  EXPECT_EQ(out.done(), 1u) << "batch 2 completes only after its own fdatasync";

  e.open_gate();
  ASSERT_TRUE(q.run_until([&] { return out.done() == 100; }));
  EXPECT_EQ(w->stats().syncs - syncs_before, 2u) << "100 appends, 2 fdatasyncs";
  EXPECT_EQ(w->stats().batches, 2u);
  for (std::size_t i = 0; i < out.acks.size(); ++i) EXPECT_EQ(out.acks[i]->seq.value(), i + 1);
}

// The figures behind /metrics: records per batch and bytes per batch (one observation per batch), one
// fdatasync duration per sync, and the segment files with their bytes.
TEST(log_writer, stats_report_batch_sizes_sync_times_and_segments) {
  mem_env inner;
  gated_env e(inner);
  completion_queue q;
  log_options opts;
  opts.segment_bytes = 1024;
  auto w = open_log(e, q, opts);
  const log_stats before = w->stats();
  EXPECT_EQ(before.segments, 1u);
  EXPECT_EQ(before.segment_bytes, format::segment_header_size);
  outcome out;

  e.close_gate();
  append_str(*w, "first", out);
  ASSERT_TRUE(e.wait_blocked(1));  // batch 1: one record
  for (int i = 0; i < 99; ++i) append_str(*w, "queued", out);
  e.open_gate();  // batch 2: the 99 others
  ASSERT_TRUE(q.run_until([&] { return out.done() == 100; }));

  const log_stats s = w->stats();
  ASSERT_EQ(s.batches, 2u);
  // count_bounds: 1, 2, 4, ..., 64, 128: one batch of 1, one of 99 (in the 128 bucket).
  ASSERT_EQ(s.batch_records.counts.size(), std::size(metrics::count_bounds) + 1);
  EXPECT_EQ(s.batch_records.counts[0], 1u);
  EXPECT_EQ(s.batch_records.counts[7], 1u);
  EXPECT_EQ(s.batch_records.count(), 2u);
  EXPECT_EQ(s.batch_records.sum, 100u);
  const std::uint64_t record = format::record_header_size;
  EXPECT_EQ(s.batch_bytes.sum, (record + 5) + 99 * (record + 6));
  // One duration per fdatasync: one per batch, one per segment rolled.
  EXPECT_EQ(s.sync_us.count(), s.syncs);
  EXPECT_EQ(s.syncs - before.syncs, 2u + (s.segments - 1));
  // 100 records of 29-30 bytes do not fit one 1 KiB segment: the log rolled.
  EXPECT_GT(s.segments, 1u);
  std::uint64_t on_disk = 0;
  for (std::uint64_t id = 1; id <= s.segments; ++id) {
    auto bytes = inner.contents(std::string(dir) + "/" + format::segment_file_name(segment_id{id}));
    ASSERT_TRUE(bytes) << id;
    on_disk += bytes->size();
  }
  EXPECT_EQ(s.segment_bytes, on_disk);
}

TEST(log_writer, linger_lets_the_loop_reappend_into_the_next_batch) {
  // 8 closed-loop producers: each completion appends that producer's next record. With linger the sync
  // thread waits for the completions to run before taking the next batch, so once the first appends have
  // gone out every batch carries all 8 (without it they split into two alternating groups).
  mem_env e;
  completion_queue q;
  log_options opts;
  opts.linger = std::chrono::seconds(10);  // far longer than the test needs to run the completions
  auto w = open_log(e, q, opts);
  constexpr int producers = 8, rounds = 30;
  int done = 0;
  std::function<void(int, int)> issue = [&](int p, int round) {
    w->append(1, bytes_of("p" + std::to_string(p)), [&, p, round](result<append_ack> r) {
      ASSERT_TRUE(r);
      ++done;
      if (round + 1 < rounds) issue(p, round + 1);
    });
  };
  for (int p = 0; p < producers; ++p) issue(p, 0);
  ASSERT_TRUE(q.run_until([&] { return done == producers * rounds; }));
  EXPECT_EQ(w->stats().records, static_cast<std::uint64_t>(producers * rounds));
  EXPECT_LE(w->stats().batches, static_cast<std::uint64_t>(rounds + 2));
}

TEST(log_writer, segments_roll_at_the_configured_size) {
  mem_env e;
  completion_queue q;
  outcome out;
  log_options opts;
  opts.segment_bytes = 256;
  const std::string payload(50, 'p');  // 74 bytes per record: 2 fit after the 40-byte header, the third rolls
  {
    auto w = open_log(e, q, opts);
    for (int i = 0; i < 10; ++i) {
      append_str(*w, payload, out);
      ASSERT_TRUE(q.run_until([&] { return out.done() == static_cast<std::size_t>(i + 1); }));
    }
  }
  std::set<std::uint64_t> segs;
  for (auto& a : out.acks) {
    ASSERT_TRUE(a);
    segs.insert(a->pos.segment.value());
    EXPECT_LE(a->pos.offset + format::record_header_size + payload.size(), opts.segment_bytes);
  }
  EXPECT_EQ(segs.size(), 5u);  // 2 records per segment
  for (std::uint64_t id = 1; id <= 5; ++id) {
    EXPECT_TRUE(e.file_exists(std::string(dir) + "/" + format::segment_file_name(segment_id{id})));
  }
  auto got = recover_all(e);
  ASSERT_EQ(got.size(), 10u);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].pos, out.acks[i]->pos);
}

TEST(log_writer, a_record_larger_than_a_segment_gets_a_segment_of_its_own) {
  mem_env e;
  completion_queue q;
  outcome out;
  log_options opts;
  opts.segment_bytes = 128;
  {
    auto w = open_log(e, q, opts);
    append_str(*w, "small", out);
    append_str(*w, std::string(500, 'L'), out);
    append_str(*w, "after", out);
    ASSERT_TRUE(q.run_until([&] { return out.done() == 3; }));
  }
  ASSERT_TRUE(out.acks[0] && out.acks[1] && out.acks[2]);
  EXPECT_EQ(out.acks[0]->pos.segment, segment_id{1});
  EXPECT_EQ(out.acks[1]->pos.segment, segment_id{2});
  EXPECT_EQ(out.acks[2]->pos.segment, segment_id{3});
  auto got = recover_all(e);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].payload, std::string(500, 'L'));
}

TEST(log_writer, segment_reader_preads_by_acknowledged_position) {
  mem_env e;
  completion_queue q;
  outcome out;
  log_options opts;
  opts.segment_bytes = 200;
  auto w = open_log(e, q, opts);
  for (int i = 0; i < 12; ++i) append_str(*w, "value-" + std::to_string(i), out, 9);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 12; }));
  segment_reader reader(e, dir);
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(out.acks[i]);
    auto r = reader.read_record(out.acks[i]->pos);
    ASSERT_TRUE(r) << r.err().reason;
    EXPECT_EQ(r->seq, out.acks[i]->seq);
    EXPECT_EQ(r->type, 9);
    EXPECT_EQ(testing::string_of(r->payload), "value-" + std::to_string(i));
    // Raw pread of just the payload, as the hot tier will do.
    std::string want = "value-" + std::to_string(i);
    std::vector<std::byte> buf(want.size());
    log_position at = out.acks[i]->pos;
    at.offset += format::record_header_size;
    auto n = reader.pread(at, buf);
    ASSERT_TRUE(n);
    EXPECT_EQ(testing::string_of(buf), want);
  }
  auto bad = reader.read_record(log_position{segment_id{1}, out.acks[0]->pos.offset + 1});
  ASSERT_FALSE(bad);
  EXPECT_EQ(errc_of(bad.err()), errc::corruption);
}

TEST(log_writer, fsync_mode_always_syncs_every_batch_before_completing) {
  mem_env inner;
  gated_env e(inner);
  completion_queue q;
  auto w = open_log(e, q);
  outcome out;
  e.close_gate();
  append_str(*w, "a", out);
  ASSERT_TRUE(e.wait_blocked(1));
  q.run_ready();
  EXPECT_EQ(out.done(), 0u);
  e.open_gate();
  ASSERT_TRUE(q.run_until([&] { return out.done() == 1; }));
  EXPECT_EQ(w->stats().syncs, w->stats().batches);
}

TEST(log_writer, fsync_mode_never_completes_without_syncing) {
  mem_env e;
  completion_queue q;
  log_options opts;
  opts.sync = *parse_sync_policy("never");
  outcome out;
  auto w = open_log(e, q, opts);
  const auto env_syncs = e.sync_count();
  for (int i = 0; i < 50; ++i) append_str(*w, "n", out);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 50; }));
  EXPECT_EQ(e.sync_count(), env_syncs);
  EXPECT_EQ(w->stats().syncs, 0u);
  w.reset();  // a clean stop syncs what is written
  EXPECT_GT(e.sync_count(), env_syncs);
  e.crash();
  e.restart();
  EXPECT_EQ(recover_all(e).size(), 50u);
}

TEST(log_writer, fsync_mode_interval_completes_before_the_sync_and_syncs_later) {
  mem_env inner;
  gated_env e(inner);
  completion_queue q;
  log_options opts;
  // Long enough that the 30 appends are written before the first periodic sync even on a loaded
  // machine.
  opts.sync = *parse_sync_policy("interval:500");
  auto w = open_log(e, q, opts);
  e.close_gate();  // any fdatasync now blocks: the completions must not wait for one
  outcome out;
  for (int i = 0; i < 30; ++i) append_str(*w, "i", out);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 30; }));
  EXPECT_EQ(w->stats().records, 30u);
  ASSERT_TRUE(e.wait_blocked(1)) << "the periodic fdatasync comes after the interval";
  e.open_gate();
  w.reset();  // a clean stop syncs anything still unsynced
  inner.crash();
  inner.restart();
  EXPECT_EQ(recover_all(inner).size(), 30u);
}

// The periodic fdatasync runs on the flusher thread: appends made while it is stuck (60-110 ms on a
// busy device, here blocked until the test opens the gate) are written and complete at once. When the
// sync ran on the sync thread itself they waited for it: a 127 ms p99 in interval mode.
TEST(log_writer, fsync_mode_interval_never_makes_appends_wait_for_the_periodic_sync) {
  mem_env inner;
  gated_env e(inner);
  completion_queue q;
  log_options opts;
  opts.sync = *parse_sync_policy("interval:1");
  auto w = open_log(e, q, opts);
  e.close_gate();
  outcome out;
  append_str(*w, "before", out);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 1; }));
  ASSERT_TRUE(e.wait_blocked(1)) << "no periodic fdatasync began";
  // A sync is in flight and blocked: these must still complete.
  for (int i = 0; i < 50; ++i) append_str(*w, "during", out);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 51; })) << "appends waited for the periodic fdatasync";
  for (const auto& a : out.acks) ASSERT_TRUE(a) << a.err().reason;
  EXPECT_EQ(e.blocked(), 1) << "a second sync began while the first was still running";
  e.open_gate();
  w.reset();
  inner.crash();
  inner.restart();
  EXPECT_EQ(recover_all(inner).size(), 51u);
}

// A periodic sync that fails poisons the log: later appends fail instead of building on data the page
// cache may have dropped.
TEST(log_writer, fsync_mode_interval_background_sync_failure_poisons_later_appends) {
  mem_env inner;
  gated_env e(inner);
  completion_queue q;
  log_options opts;
  opts.sync = *parse_sync_policy("interval:1");
  auto w = open_log(e, q, opts);
  e.close_gate();
  outcome out;
  append_str(*w, "a", out);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 1; }));
  ASSERT_TRUE(out.acks[0]);
  ASSERT_TRUE(e.wait_blocked(1));
  inner.fail_next_syncs(1);
  e.open_gate();  // the blocked periodic sync now fails
  // The flusher posts nothing when it records the failure: wait for the state itself (bounded).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (w->stats().failed_periodic_syncs == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_EQ(w->stats().failed_periodic_syncs, 1u);
  append_str(*w, "b", out);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 2; }));
  ASSERT_FALSE(out.acks[1]) << "an append went on after the periodic fdatasync failed";
  EXPECT_EQ(errc_of(out.acks[1].err()), errc::poisoned);
}

// Gathering (log_options::gather) only delays a batch: a closed loop of writers, each appending again
// from its completion, all complete, in order per writer, and all survive a crash.
TEST(log_writer, fsync_always_with_gather_completes_a_closed_loop_of_writers) {
  mem_env e;
  completion_queue q;
  log_options opts;
  opts.gather = std::chrono::microseconds(500);
  auto w = open_log(e, q, opts);
  constexpr int writers = 16, rounds = 20;
  std::vector<int> done(writers, 0);
  std::function<void(int)> next = [&](int id) {
    w->append(1, bytes_of("w" + std::to_string(id)), [&, id](result<append_ack> r) {
      ASSERT_TRUE(r) << r.err().reason;
      if (++done[id] < rounds) next(id);
    });
  };
  for (int id = 0; id < writers; ++id) next(id);
  ASSERT_TRUE(q.run_until([&] {
    for (int d : done)
      if (d < rounds) return false;
    return true;
  }));
  EXPECT_EQ(w->stats().records, static_cast<std::uint64_t>(writers * rounds));
  w.reset();
  e.crash();
  e.restart();
  EXPECT_EQ(recover_all(e).size(), static_cast<std::size_t>(writers * rounds));
}

// log_writer::sync() in `never` mode: the records appended before it are durable once it reports ok; those
// appended after it (and never synced) are lost by a crash.
TEST(log_writer, sync_request_makes_the_records_before_it_durable_in_never_mode) {
  mem_env e;
  completion_queue q;
  log_options opts;
  opts.sync = *parse_sync_policy("never");
  auto w = open_log(e, q, opts);
  outcome out;
  for (int i = 0; i < 10; ++i) append_str(*w, "before", out);
  std::optional<status> synced;
  w->sync([&](status st) { synced = st; });
  ASSERT_TRUE(q.run_until([&] { return synced.has_value(); }));
  ASSERT_TRUE(*synced) << synced->err().reason;
  ASSERT_EQ(out.done(), 10u);  // their completions ran before the sync's
  for (int i = 0; i < 5; ++i) append_str(*w, "after", out);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 15; }));
  e.crash();  // no clean stop: only what was synced survives
  w.reset();
  e.restart();
  auto got = recover_all(e);
  ASSERT_EQ(got.size(), 10u);
  for (const auto& r : got) EXPECT_EQ(r.payload, "before");
}

// In interval mode the requested fdatasync runs on the flusher thread: appends made while it is stuck
// complete at once, and the request completes once it is done.
TEST(log_writer, sync_request_never_makes_appends_wait_in_interval_mode) {
  mem_env inner;
  gated_env e(inner);
  completion_queue q;
  log_options opts;
  opts.sync = *parse_sync_policy("interval:1000000");  // no periodic sync during the test
  auto w = open_log(e, q, opts);
  outcome out;
  for (int i = 0; i < 10; ++i) append_str(*w, "before", out);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 10; }));
  e.close_gate();
  std::optional<status> synced;
  w->sync([&](status st) { synced = st; });
  ASSERT_TRUE(e.wait_blocked(1)) << "the requested fdatasync did not begin";
  for (int i = 0; i < 20; ++i) append_str(*w, "during", out);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 30; })) << "appends waited for the requested sync";
  EXPECT_FALSE(synced.has_value());
  e.open_gate();
  ASSERT_TRUE(q.run_until([&] { return synced.has_value(); }));
  ASSERT_TRUE(*synced) << synced->err().reason;
  inner.crash();
  w.reset();
  inner.restart();
  auto got = recover_all(inner);
  ASSERT_GE(got.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(got[i].payload, "before");
}

// In `always` mode every completed append is already durable: a sync completes right after them.
TEST(log_writer, sync_request_completes_after_the_appends_before_it_in_always_mode) {
  mem_env e;
  completion_queue q;
  auto w = open_log(e, q);
  outcome out;
  std::size_t appends_done_at_sync = 0;
  for (int i = 0; i < 10; ++i) append_str(*w, "a", out);
  std::optional<status> synced;
  w->sync([&](status st) {
    appends_done_at_sync = out.done();
    synced = st;
  });
  ASSERT_TRUE(q.run_until([&] { return synced.has_value(); }));
  ASSERT_TRUE(*synced) << synced->err().reason;
  EXPECT_EQ(appends_done_at_sync, 10u);
}

// A requested fdatasync that fails reports the error and poisons the log, as a failed periodic one does:
// the page cache may have dropped records that were acknowledged.
TEST(log_writer, sync_request_failure_is_reported_and_poisons_later_appends) {
  mem_env e;
  completion_queue q;
  log_options opts;
  opts.sync = *parse_sync_policy("never");
  auto w = open_log(e, q, opts);
  outcome out;
  append_str(*w, "a", out);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 1; }));
  e.fail_next_syncs(1);
  std::optional<status> synced;
  w->sync([&](status st) { synced = st; });
  ASSERT_TRUE(q.run_until([&] { return synced.has_value(); }));
  ASSERT_FALSE(*synced);
  EXPECT_EQ(errc_of(synced->err()), errc::io_error);
  append_str(*w, "b", out);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 2; }));
  ASSERT_FALSE(out.acks[1]) << "an append went on after a requested fdatasync failed";
  EXPECT_EQ(errc_of(out.acks[1].err()), errc::poisoned);
  // A later sync request fails too (a second fdatasync could succeed without the dropped pages).
  std::optional<status> again;
  w->sync([&](status st) { again = st; });
  ASSERT_TRUE(q.run_until([&] { return again.has_value(); }));
  ASSERT_FALSE(*again);
  EXPECT_EQ(errc_of(again->err()), errc::poisoned);
}

// The lone-writer path (log_options::idle_spin: no linger after a one-record batch, a short poll for the
// next append): a single writer appending from each completion gets every record, in order, durable.
TEST(log_writer, lone_writer_with_idle_spin_appends_in_order_and_durably) {
  mem_env e;
  completion_queue q;
  log_options opts;
  opts.idle_spin = std::chrono::microseconds(200);
  auto w = open_log(e, q, opts);
  constexpr int rounds = 50;
  std::vector<lsn> seqs;
  std::function<void()> next = [&] {
    w->append(1, bytes_of("r" + std::to_string(seqs.size())), [&](result<append_ack> r) {
      ASSERT_TRUE(r) << r.err().reason;
      seqs.push_back(r->seq);
      if (seqs.size() < rounds) next();
    });
  };
  next();
  ASSERT_TRUE(q.run_until([&] { return seqs.size() == rounds; }));
  for (int i = 0; i < rounds; ++i) EXPECT_EQ(seqs[i], lsn{static_cast<std::uint64_t>(i + 1)});
  EXPECT_EQ(w->stats().batches, static_cast<std::uint64_t>(rounds)) << "one append in flight at a time";
  e.crash();  // no clean stop: every completed append was synced
  w.reset();
  e.restart();
  auto got = recover_all(e);
  ASSERT_EQ(got.size(), static_cast<std::size_t>(rounds));
  for (int i = 0; i < rounds; ++i) EXPECT_EQ(got[i].payload, "r" + std::to_string(i));
}

// Waits (bounded) until the sync thread has nothing to do, so that the next lone append may go inline.
bool wait_idle(log_writer& w) {
  for (int i = 0; i < 200'000 && !w.idle(); ++i) std::this_thread::yield();
  return w.idle();
}

// log_options::inline_after: a lone append written on the calling thread, then appends queued for the
// sync thread behind it, then a lone append that must queue too (the sync thread is busy): completions
// and lsns follow the order of the appends, and every record is durable once completed.
TEST(log_writer, inline_and_threaded_appends_alternate_in_order) {
  mem_env e;
  completion_queue q;
  log_options opts;
  opts.inline_after = 1;
  auto w = open_log(e, q, opts);
  std::vector<std::string> sent;
  std::vector<std::pair<std::string, lsn>> done;
  auto append = [&](bool lone) {
    std::string p = "r" + std::to_string(sent.size());
    sent.push_back(p);
    w->append(
        1, bytes_of(p),
        [&done, p](result<append_ack> r) {
          ASSERT_TRUE(r) << r.err().reason;
          done.emplace_back(p, r->seq);
        },
        lone);
  };
  append(true);  // the sync thread writes it (no lone batch yet): the streak begins
  ASSERT_TRUE(q.run_until([&] { return done.size() == sent.size(); }));
  constexpr int rounds = 10;
  for (int i = 0; i < rounds; ++i) {
    ASSERT_TRUE(wait_idle(*w));
    const auto inline_before = w->stats().inline_batches;
    append(true);
    EXPECT_EQ(w->stats().inline_batches, inline_before + 1) << "idle writer, lone batches before: inline";
    append(false);
    append(false);
    append(true);  // queued behind the two above, never written before them
    ASSERT_TRUE(q.run_until([&] { return done.size() == sent.size(); }));
    // The batches of several records ended the streak; a lone one (two in a row here) restarts it.
    ASSERT_TRUE(wait_idle(*w));
    append(true);
    ASSERT_TRUE(q.run_until([&] { return done.size() == sent.size(); }));
  }
  ASSERT_EQ(done.size(), sent.size());
  for (std::size_t i = 0; i < done.size(); ++i) {
    EXPECT_EQ(done[i].first, sent[i]) << "completions in append order";
    EXPECT_EQ(done[i].second, lsn{i + 1});
  }
  EXPECT_GE(w->stats().inline_batches, static_cast<std::uint64_t>(rounds));
  e.crash();  // no clean stop: every completed append was synced
  w.reset();
  e.restart();
  auto got = recover_all(e);
  ASSERT_EQ(got.size(), sent.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].payload, sent[i]);
}

// With inline_after 0, or outside `always` mode, a lone append never runs on the calling thread.
TEST(log_writer, inline_appends_only_when_enabled_and_in_always_mode) {
  for (auto [mode, after] : {std::pair{sync_mode::always, 0u}, std::pair{sync_mode::never, 1u}}) {
    mem_env e;
    completion_queue q;
    log_options opts;
    opts.sync.mode = mode;
    opts.inline_after = after;
    auto w = open_log(e, q, opts);
    outcome out;
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(wait_idle(*w));
      w->append(
          1, bytes_of("x"), [&out](result<append_ack> r) { out.acks.push_back(std::move(r)); }, true);
      ASSERT_TRUE(q.run_until([&] { return out.done() == static_cast<std::size_t>(i + 1); }));
    }
    EXPECT_EQ(w->stats().inline_batches, 0u);
    EXPECT_EQ(w->stats().records, 5u);
  }
}

// A lone writer's record larger than inline_max_bytes goes to the sync thread (its write would hold the
// caller's loop); the next small one goes inline again.
TEST(log_writer, a_large_lone_append_is_not_written_inline) {
  mem_env e;
  completion_queue q;
  log_options opts;
  opts.inline_after = 1;
  opts.inline_max_bytes = 100;
  auto w = open_log(e, q, opts);
  outcome out;
  std::size_t sent = 0;
  auto lone_append = [&](const std::string& s) {
    ASSERT_TRUE(wait_idle(*w));
    w->append(
        1, bytes_of(s), [&out](result<append_ack> r) { out.acks.push_back(std::move(r)); }, true);
    ++sent;
    ASSERT_TRUE(q.run_until([&] { return out.done() == sent; }));
  };
  lone_append("first");  // by the sync thread: the streak begins
  lone_append("small");
  EXPECT_EQ(w->stats().inline_batches, 1u);
  lone_append(std::string(101, 'L'));
  EXPECT_EQ(w->stats().inline_batches, 1u) << "101 bytes > inline_max_bytes: the sync thread wrote it";
  lone_append(std::string(100, 's'));
  EXPECT_EQ(w->stats().inline_batches, 2u);
  EXPECT_EQ(w->stats().records, 4u);
  for (auto& a : out.acks) EXPECT_TRUE(a);
}

// A checkpoint (and a sync request) queued while an inline append is in its fdatasync runs after it, on
// the sync thread, and covers it; the next lone append does not go inline while they are queued.
TEST(log_writer, checkpoint_queued_during_an_inline_write_runs_after_it) {
  mem_env inner;
  gated_env e(inner);
  completion_queue q;
  log_options opts;
  opts.inline_after = 1;
  auto w = open_log(e, q, opts);
  outcome out;
  auto lone_append = [&](std::string_view s) {
    w->append(
        1, bytes_of(s), [&out](result<append_ack> r) { out.acks.push_back(std::move(r)); }, true);
  };
  lone_append("first");  // by the sync thread
  ASSERT_TRUE(q.run_until([&] { return out.done() == 1; }));
  ASSERT_TRUE(wait_idle(*w));

  e.close_gate();
  std::thread appender([&] { lone_append("inline"); });  // blocks in its own fdatasync
  ASSERT_TRUE(e.wait_blocked(1));
  std::optional<result<std::vector<segment_id>>> cp;
  std::optional<status> synced;
  w->checkpoint(lsn{2}, {}, {}, [&](result<std::vector<segment_id>> r) { cp = std::move(r); });
  w->sync([&](status st) { synced = st; });
  q.run_ready();
  EXPECT_FALSE(cp) << "the checkpoint waits for the inline write";
  EXPECT_FALSE(synced);
  e.open_gate();
  appender.join();
  EXPECT_EQ(w->stats().inline_batches, 1u);
  ASSERT_TRUE(q.run_until([&] { return out.done() == 2 && cp && synced; }));
  ASSERT_TRUE(out.acks[1]) << out.acks[1].err().reason;
  EXPECT_EQ(out.acks[1]->seq, lsn{2});
  ASSERT_TRUE(*cp) << cp->err().reason << " (lsn 2 was written before the checkpoint ran)";
  EXPECT_TRUE(*synced);
  lone_append("after");
  ASSERT_TRUE(q.run_until([&] { return out.done() == 3; }));
  ASSERT_TRUE(out.acks[2]);
  EXPECT_EQ(out.acks[2]->seq, lsn{3});
  w.reset();
  std::vector<replayed> got;
  auto rec = testing::recover_into(inner, dir, got);
  ASSERT_TRUE(rec) << rec.err().reason;
  ASSERT_EQ(got.size(), 1u) << "the checkpoint covers lsn 2";
  EXPECT_EQ(got[0].payload, "after");
}

}  // namespace
}  // namespace weir::storage
