// A single node's cold tier built directly (replica::cold_mover over a partition on its own loop, the
// in-memory object store): durable bytes go to objects, the index records them through the partition's
// log, a restart replays (or loads from a checkpoint) the same index, a refused upload is retried with
// the same key and bytes, appends stop at the local budget while the bucket is down, and streams are
// read in turns (all a stream has in one pass, at once after feed_after_bytes, cut at turn_bytes and
// turn_time), and its counts of local and held bytes follow each change as it is applied. With a
// cluster lane's groups (cold_groups): only the groups this node leads upload, each
// under its term, and a record that did not commit sends its bytes again.
#include "replica/cold_mover.h"

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <thread>

#include "replica/cold_state.h"
#include "streams/json_stored.h"
#include "tier/cold_fetcher.h"
#include "tier/hot_tier.h"
#include "tier/mem_object_store.h"
#include "tier/object_format.h"
#include "unit/replica/partition_on_loop.h"
#include "unit/streams/command_builders.h"

namespace weir::replica {
namespace {

using streams::testing::make_append;
using streams::testing::make_create;
using testing::quiet_host;

class cold_mover_test : public testing::partition_on_loop {
 protected:
  void SetUp() override { open(); }

  void open(std::uint64_t checkpoint_bytes = 0, std::uint64_t local_budget = 0,
            std::uint64_t keep_bytes = 0) {
    partition_options po;
    po.checkpoint_bytes = checkpoint_bytes;
    po.hot_bytes = hot_bytes_;
    wal_options wo;
    wo.data_dir = "/data";
    wo.sync = storage::sync_policy{};
    wo.segment_bytes = 16 * 1024;  // several segments: a reclaim deletes some
    ASSERT_TRUE(open_partition(host_, po, wo, [&] {
      auto term = next_cold_term(env_, "/data/wal/core-0");
      ASSERT_TRUE(term.has_value());
      cold_mover_options o;
      o.groups = groups_;
      o.upload.group = tier::cold_group(0);
      o.upload.term = tier::leader_term(*term);
      o.upload.target_object_bytes = 1 << 20;
      o.upload.max_age = std::chrono::hours(1);  // objects go when a test flushes
      o.upload.retry_base = std::chrono::milliseconds(1);
      o.upload.retry_max = std::chrono::milliseconds(2);
      o.scan_interval = std::chrono::hours(1);  // passes run when a test asks
      o.keep_bytes = keep_bytes;
      if (tune_) tune_(o);
      raft::executor* ex = ex_.get();
      part_->attach_cold(
          o,
          [this, ex](std::string key, tier::shared_object_bytes bytes, tier::uploader::put_done done) {
            // The store answers on the loop's next turn, as the workers post their completions; while the
            // bucket is out of reach (hold_puts_) the request waits for release_puts().
            auto send = [this, ex, key = std::move(key), bytes = std::move(bytes), done = std::move(done)] {
              auto r = store_.put(key, *bytes);
              ex->post([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
            };
            if (hold_puts_) return held_.push_back(std::move(send));
            send();
          },
          local_budget);
      part_->attach_object_reads([this, ex](std::string key, std::uint64_t size, std::uint64_t position,
                                            std::uint64_t length, partition::object_done done) {
        auto got = fetcher_.read(key, size, position, length);
        ex->post([done = std::move(done), got = std::move(got)]() mutable { done(std::move(got)); });
      });
      part_->start_cold();
    }));
  }
  // One pass of the mover, the object being filled sent, its answer and its index record applied, and
  // the record durable (a command submitted after it completes after it).
  void upload_now() {
    on_loop([&] {
      part_->mover()->pass();
      part_->mover()->flush();
      return 0;
    });
    on_loop([] { return 0; });  // the put's answer, then the report and the index record
    ASSERT_EQ(submit(streams::expire_command{"/none", 0}).failure, errc::ok);
  }
  // The puts held while the bucket was out of reach are sent, answered and recorded.
  void release_puts() {
    on_loop([&] {
      hold_puts_ = false;
      for (auto& send : held_) send();
      held_.clear();
      return 0;
    });
    on_loop([] { return 0; });
    ASSERT_EQ(submit(streams::expire_command{"/none", 0}).failure, errc::ok);
  }
  // Waits (at most about 10 s, in 1 ms steps of the loop's timers) until `done()`: for what the loop's
  // timers or the log's thread finish later (a retried upload, a checkpoint).
  void wait_until(const std::function<bool()>& done) {
    for (int i = 0; i < 10'000 && !done(); ++i) {
      std::promise<void> turn;
      auto stepped = turn.get_future();
      on_loop([&] {
        ex_->add_timer(std::chrono::milliseconds(1), [&] { turn.set_value(); });
        return 0;
      });
      stepped.get();
    }
  }
  void wait_for_cold_end(const std::string& stream, std::uint64_t end) {
    wait_until([&] { return cold_end(stream) == end; });
  }
  // A reader's catch-up of `path` in 4 KiB reads (partition_on_loop::read_through).
  std::string read_through(const std::string& path, std::vector<std::string>* chunks = nullptr) {
    return partition_on_loop::read_through(*part_, path, 4096, chunks);
  }
  std::size_t segment_files() {
    auto names = env_.list_dir("/data/wal/core-0");
    std::size_t n = 0;
    if (names) {
      for (const auto& name : *names) n += name.ends_with(".log") ? 1 : 0;
    }
    return n;
  }
  // Bytes of the core's segment files (a segment rolled early onto a prepared one holds less than its size).
  std::uint64_t segment_bytes() {
    auto names = env_.list_dir("/data/wal/core-0");
    std::uint64_t n = 0;
    if (names) {
      for (const auto& name : *names)
        if (name.ends_with(".log")) n += env_.contents("/data/wal/core-0/" + name)->size();
    }
    return n;
  }
  // The bytes of `stream` the index places in objects, read back from the store.
  std::string cold_bytes(const std::string& stream) {
    return on_loop([&] {
      std::string out;
      const tier::cold_index& index = part_->cold_index();
      std::uint64_t at = 0;
      while (auto loc = index.find(stream, streams::stream_offset(at))) {
        auto reader = tier::object_reader::open(store_, loc->object->key, loc->object->size);
        EXPECT_TRUE(reader.has_value());
        if (!reader) break;
        const tier::cold_extent& e = *loc->extent;
        auto got = reader->read(e.data_position, e.end.value() - e.first.value());
        EXPECT_TRUE(got.has_value());
        if (!got) break;
        out.append(reinterpret_cast<const char*>(got->data()), got->size());
        at = e.end.value();
      }
      return out;
    });
  }
  std::optional<std::uint64_t> cold_end(const std::string& stream) {
    return on_loop([&]() -> std::optional<std::uint64_t> {
      auto e = part_->cold_index().cold_end(stream);
      if (!e) return std::nullopt;
      return e->value();
    });
  }

  std::size_t hot_bytes_ = partition_options{}.hot_bytes;
  std::function<void(cold_mover_options&)> tune_;  // before open(): the mover's options as a test wants them
  tier::mem_object_store store_;
  tier::cold_fetcher fetcher_{store_};
  quiet_host host_;
  cold_groups* groups_ = nullptr;            // a cluster's groups (null: a single node)
  bool hold_puts_ = false;                   // the loop's
  std::vector<std::function<void()>> held_;  // the loop's
};

// A cluster lane's groups, as a raft lane shows them to the mover: /a... in group 3, /b... in group 5;
// which of them this node leads (and in what term) is the test's to change; a record applies to the
// partition's index at once (a committed entry's apply) unless the test makes it fail (not committed).
struct two_groups final : cold_groups {
  partition* part = nullptr;
  std::map<std::uint32_t, std::uint64_t> led;  // group -> term
  bool fail_records = false;
  std::vector<std::uint32_t> recorded_in;
  std::vector<std::uint32_t> groups() const override { return {3, 5}; }
  std::uint32_t group_of(std::string_view path) const override { return path.starts_with("/a") ? 3 : 5; }
  std::optional<std::uint64_t> leader_term(std::uint32_t g) const override {
    auto it = led.find(g);
    if (it == led.end()) return std::nullopt;
    return it->second;
  }
  void record(std::uint32_t g, std::vector<std::byte> rec, recorded done) override {
    recorded_in.push_back(g);
    if (fail_records) return done(make_error(errc::cluster_unavailable, "no leader"));
    done(part->apply_index_entry(rec));
  }
  void settle(std::uint32_t g, std::function<void(bool)> ready) override { ready(led.contains(g)); }
};

class cold_mover_groups_test : public cold_mover_test {
 protected:
  void SetUp() override {
    groups_ = &lane_;
    open();
    lane_.part = part_.get();
  }
  // Runs the mover's pass (it follows leadership first), sends what it packed, and lets the puts answer.
  void pass_and_flush() {
    on_loop([&] {
      part_->mover()->pass();
      part_->mover()->flush();
      return 0;
    });
    on_loop([] { return 0; });
  }
  two_groups lane_;
};

TEST_F(cold_mover_groups_test, only_the_groups_this_node_leads_upload_each_under_its_term) {
  for (const char* p : {"/a1", "/b1"}) ASSERT_EQ(submit(make_create(p)).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/a1", "alpha")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/b1", "bravo")).failure, errc::ok);
  // A follower of both: nothing goes, but its bytes count against the budget all the same.
  pass_and_flush();
  EXPECT_TRUE(store_.keys().empty());
  EXPECT_EQ(on_loop([&] { return part_->mover()->local_bytes(); }), 10u);

  on_loop([&] { return lane_.led[3] = 7; });
  pass_and_flush();
  ASSERT_EQ(store_.keys().size(), 1u);
  EXPECT_EQ(store_.keys()[0], "e0001/g00000003/t0000000000000007-s0000000000000000.obj");
  EXPECT_EQ(cold_end("/a1"), 5u);
  EXPECT_EQ(cold_end("/b1"), std::nullopt);
  EXPECT_EQ(lane_.recorded_in, std::vector<std::uint32_t>{3});

  // Group 5 led too, in term 2: its own object, its own sequence.
  on_loop([&] { return lane_.led[5] = 2; });
  pass_and_flush();
  ASSERT_EQ(store_.keys().size(), 2u);
  EXPECT_EQ(store_.keys()[1], "e0001/g00000005/t0000000000000002-s0000000000000000.obj");
  EXPECT_EQ(cold_bytes("/b1"), "bravo");
  EXPECT_EQ(on_loop([&] { return part_->mover()->uploads().groups_led; }), 2u);
}

TEST_F(cold_mover_groups_test,
       a_record_that_did_not_commit_sends_the_bytes_again_and_a_new_term_starts_over) {
  ASSERT_EQ(submit(make_create("/a1")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/a1", "one,")).failure, errc::ok);
  on_loop([&] {
    lane_.led[3] = 4;
    lane_.fail_records = true;
    return 0;
  });
  pass_and_flush();
  ASSERT_EQ(store_.keys().size(), 1u);  // uploaded, but its record did not commit
  EXPECT_EQ(cold_end("/a1"), std::nullopt);

  // Leadership lost and won back in a later term: the stream goes again from its cold end, under keys
  // of the new term (the old term's object is an orphan for the sweep).
  on_loop([&] {
    lane_.led.erase(3);
    return 0;
  });
  pass_and_flush();
  EXPECT_EQ(on_loop([&] { return part_->mover()->uploads().groups_led; }), 0u);
  ASSERT_EQ(submit(make_append("/a1", "two")).failure, errc::ok);
  on_loop([&] {
    lane_.led[3] = 6;
    lane_.fail_records = false;
    return 0;
  });
  pass_and_flush();
  ASSERT_EQ(store_.keys().size(), 2u);
  EXPECT_EQ(store_.keys()[1], "e0001/g00000003/t0000000000000006-s0000000000000000.obj");
  EXPECT_EQ(cold_end("/a1"), 7u);
  EXPECT_EQ(cold_bytes("/a1"), "one,two");
}

TEST_F(cold_mover_test, durable_bytes_of_every_stream_go_to_one_object_and_the_index_records_them) {
  ASSERT_EQ(submit(make_create("/a")).failure, errc::ok);
  ASSERT_EQ(submit(make_create("/b")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/a", "alpha,")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/b", "bravo")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/a", "again")).failure, errc::ok);
  upload_now();
  EXPECT_EQ(store_.keys().size(), 1u);  // several streams per object
  EXPECT_EQ(store_.keys()[0], "e0001/g00000000/t0000000000000001-s0000000000000000.obj");
  EXPECT_EQ(cold_end("/a"), 11u);
  EXPECT_EQ(cold_end("/b"), 5u);
  EXPECT_EQ(cold_bytes("/a"), "alpha,again");
  EXPECT_EQ(cold_bytes("/b"), "bravo");
  EXPECT_EQ(on_loop([&] { return part_->mover()->local_bytes(); }), 0u);

  // Later appends go in a later object, contiguous with the first.
  ASSERT_EQ(submit(make_append("/a", "+more")).failure, errc::ok);
  on_loop([&] {
    part_->mover()->note_written("/a");
    return 0;
  });
  upload_now();
  EXPECT_EQ(store_.keys().size(), 2u);
  EXPECT_EQ(cold_bytes("/a"), "alpha,again+more");
  EXPECT_EQ(on_loop([&] { return part_->mover()->stats().objects; }), 2u);
}

// A stream with more bytes than one read (scan_bytes) gives them all in one pass, in memory or read back
// from the log's segments: a fast writer is not held to scan_bytes per pass.
class cold_mover_reads_test : public cold_mover_test, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    if (!GetParam()) hot_bytes_ = 0;  // every byte from the segments
    tune_ = [](cold_mover_options& o) { o.scan_bytes = 8; };
    open();
  }
};

TEST_P(cold_mover_reads_test, a_stream_longer_than_one_read_goes_whole_in_one_pass) {
  ASSERT_EQ(submit(make_create("/a")).failure, errc::ok);
  ASSERT_EQ(submit(make_create("/b")).failure, errc::ok);
  std::string a, b;
  for (int i = 0; i < 10; ++i) {
    a += fmt::format("a{:08},", i);
    b += fmt::format("b{:04},", i);
    ASSERT_EQ(submit(make_append("/a", fmt::format("a{:08},", i))).failure, errc::ok);
    ASSERT_EQ(submit(make_append("/b", fmt::format("b{:04},", i))).failure, errc::ok);
  }
  on_loop([&] {
    part_->mover()->pass();
    return 0;
  });
  // Reads of the segments come back on later turns of the loop, and each asks for the next.
  wait_until([&] {
    return on_loop([&] { return part_->mover()->uploads().bytes_waiting; }) == a.size() + b.size();
  });
  on_loop([&] {
    part_->mover()->flush();
    return 0;
  });
  wait_for_cold_end("/a", a.size());
  wait_for_cold_end("/b", b.size());
  EXPECT_EQ(cold_bytes("/a"), a);
  EXPECT_EQ(cold_bytes("/b"), b);
  EXPECT_EQ(store_.keys().size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(memory_and_segments, cold_mover_reads_test, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "in_memory" : "from_segments"; });

TEST_F(cold_mover_test, a_writer_past_feed_after_bytes_is_read_without_waiting_for_a_pass) {
  tune_ = [](cold_mover_options& o) { o.feed_after_bytes = 16; };
  close();
  open();
  ASSERT_EQ(submit(make_create("/a")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/a", "0123456789")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/a", "abcdefghij")).failure, errc::ok);  // 20 bytes: read once durable
  wait_until([&] { return on_loop([&] { return part_->mover()->uploads().bytes_waiting; }) == 20u; });
  // Below the mark again: the next bytes wait for a pass.
  ASSERT_EQ(submit(make_append("/a", "klm")).failure, errc::ok);
  on_loop([] { return 0; });
  EXPECT_EQ(on_loop([&] { return part_->mover()->uploads().bytes_waiting; }), 20u);
  upload_now();
  EXPECT_EQ(cold_end("/a"), 23u);
  EXPECT_EQ(cold_bytes("/a"), "0123456789abcdefghijklm");
}

TEST_F(cold_mover_test, a_turn_hands_over_at_most_turn_bytes_and_the_rest_follows_on_later_turns) {
  tune_ = [](cold_mover_options& o) {
    o.scan_bytes = 10;
    o.turn_bytes = 10;
  };
  close();
  open();
  for (const char* p : {"/a", "/b", "/c"}) {
    ASSERT_EQ(submit(make_create(p)).failure, errc::ok);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(submit(make_append(p, "0123456789")).failure, errc::ok);
  }
  // The pass stops after one read of 10 bytes; the loop serves other work before the next turn.
  EXPECT_EQ(on_loop([&] {
              part_->mover()->pass();
              return part_->mover()->uploads().bytes_waiting;
            }),
            10u);
  wait_until([&] { return on_loop([&] { return part_->mover()->uploads().bytes_waiting; }) == 90u; });
  on_loop([&] {
    part_->mover()->flush();
    return 0;
  });
  for (const char* p : {"/a", "/b", "/c"}) {
    wait_for_cold_end(p, 30);
    EXPECT_EQ(cold_bytes(p), "012345678901234567890123456789");
  }
}

TEST_F(cold_mover_test, a_turn_ends_after_turn_time_with_a_clock) {
  // A clock that moves 1 ms at every look: each turn reads one stream, then lets the loop go on.
  auto now = std::make_shared<std::int64_t>(0);
  tune_ = [now](cold_mover_options& o) {
    o.clock_us = [now] { return *now += 1000; };
    o.turn_time = std::chrono::microseconds(500);
  };
  close();
  open();
  for (const char* p : {"/a", "/b", "/c"}) {
    ASSERT_EQ(submit(make_create(p)).failure, errc::ok);
    ASSERT_EQ(submit(make_append(p, "0123456789")).failure, errc::ok);
  }
  EXPECT_EQ(on_loop([&] {
              part_->mover()->pass();
              return part_->mover()->uploads().bytes_waiting;
            }),
            10u);
  wait_until([&] { return on_loop([&] { return part_->mover()->uploads().bytes_waiting; }) == 30u; });
  upload_now();
  for (const char* p : {"/a", "/b", "/c"}) EXPECT_EQ(cold_bytes(p), "0123456789");
}

TEST_F(cold_mover_test, a_restart_replays_the_index_and_uploads_under_a_new_term) {
  ASSERT_EQ(submit(make_create("/r")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/r", "one,")).failure, errc::ok);
  upload_now();
  ASSERT_EQ(submit(make_append("/r", "two")).failure, errc::ok);
  close();
  open();
  EXPECT_EQ(recovered_.index_records, 1u);
  EXPECT_EQ(cold_end("/r"), 4u);
  EXPECT_EQ(cold_bytes("/r"), "one,");
  // What the first run did not upload goes now, under term 2: no key of the first run is written again.
  upload_now();
  EXPECT_EQ(cold_bytes("/r"), "one,two");
  auto keys = store_.keys();
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_NE(keys[1].find("/t0000000000000002-s0000000000000000.obj"), std::string::npos) << keys[1];
}

TEST_F(cold_mover_test, a_checkpoint_holds_the_index_beside_the_streams) {
  close();
  open(/*checkpoint_bytes=*/64 * 1024);
  ASSERT_EQ(submit(make_create("/c")).failure, errc::ok);
  const std::string chunk(16 * 1024, 'c');
  for (int i = 0; i < 3; ++i) ASSERT_EQ(submit(make_append("/c", chunk)).failure, errc::ok);
  upload_now();
  // Enough log to checkpoint after the index record: a restart loads the index from the checkpoint.
  for (int i = 0; i < 5; ++i) ASSERT_EQ(submit(make_append("/c", chunk)).failure, errc::ok);
  EXPECT_GE(on_loop([&] { return part_->machine().size(); }), 1u);
  ASSERT_TRUE(checkpointed());
  close();
  open();
  EXPECT_GE(recovered_.checkpoints, 1u);
  EXPECT_EQ(recovered_.index_records, 0u);  // the checkpoint covered it
  EXPECT_EQ(cold_end("/c"), 3u * chunk.size());
  EXPECT_EQ(cold_bytes("/c"), chunk + chunk + chunk);
}

TEST_F(cold_mover_test, a_deleted_and_recreated_stream_starts_with_no_cold_bytes) {
  ASSERT_EQ(submit(make_create("/d")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/d", "old bytes")).failure, errc::ok);
  upload_now();
  EXPECT_EQ(cold_end("/d"), 9u);
  ASSERT_EQ(submit(streams::delete_command{"/d", 0, 0}).failure, errc::ok);
  EXPECT_EQ(cold_end("/d"), std::nullopt);
  ASSERT_EQ(submit(make_create("/d")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/d", "new")).failure, errc::ok);
  upload_now();
  EXPECT_EQ(cold_bytes("/d"), "new");
  close();
  open();
  EXPECT_EQ(cold_bytes("/d"), "new");  // the replay drops the old extents the same way
}

TEST_F(cold_mover_test, a_failed_upload_is_sent_again_with_the_same_key_and_bytes) {
  ASSERT_EQ(submit(make_create("/f")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/f", "payload")).failure, errc::ok);
  tier::injected_fault f;
  f.op = tier::store_op::put;
  f.kind = tier::fault_kind::timeout_after_apply;  // landed, but the answer was lost
  store_.inject(f, 1);
  upload_now();
  // The retry (after a millisecond or two) sends the same key again; its report records it.
  wait_for_cold_end("/f", 7);
  ASSERT_EQ(submit(streams::expire_command{"/none", 0}).failure, errc::ok);
  EXPECT_EQ(cold_end("/f"), 7u);
  EXPECT_EQ(store_.keys().size(), 1u);
  EXPECT_EQ(store_.requests(tier::store_op::put), 2u);
  EXPECT_EQ(cold_bytes("/f"), "payload");
}

TEST_F(cold_mover_test, appends_stop_at_the_local_budget_while_the_bucket_is_down_and_go_on_after) {
  close();
  open(0, /*local_budget=*/1000);
  ASSERT_EQ(submit(make_create("/q")).failure, errc::ok);
  ASSERT_EQ(submit(make_append("/q", std::string(1200, 'q'))).failure, errc::ok);
  on_loop([&] {
    hold_puts_ = true;  // the bucket is out of reach
    return 0;
  });
  upload_now();
  EXPECT_EQ(on_loop([&] { return part_->mover()->local_bytes(); }), 1200u);
  EXPECT_TRUE(on_loop([&] { return part_->local_budget_full(); }));
  EXPECT_EQ(cold_end("/q"), std::nullopt);
  // The bucket answers again: the bytes are in it, the budget frees up.
  release_puts();
  EXPECT_EQ(cold_end("/q"), 1200u);
  EXPECT_EQ(on_loop([&] { return part_->mover()->local_bytes(); }), 0u);
  EXPECT_FALSE(on_loop([&] { return part_->local_budget_full(); }));
}

TEST_F(cold_mover_test, the_counts_follow_each_change_as_it_is_applied_without_a_pass_walking_the_streams) {
  auto counts = [&] {
    return on_loop([&] {
      const cold_mover_stats& st = part_->mover()->stats();
      return std::pair{st.local_bytes, st.held_bytes};
    });
  };
  using both = std::pair<std::uint64_t, std::uint64_t>;  // local, held
  ASSERT_EQ(submit(make_create("/a")).failure, errc::ok);
  ASSERT_EQ(submit(make_create("/b", "text/plain", "xy")).failure, errc::ok);
  EXPECT_EQ(counts(), both(2, 2));
  ASSERT_EQ(submit(make_append("/a", "alpha")).failure, errc::ok);
  EXPECT_EQ(counts(), both(7, 7));
  // In the bucket: no longer local, still held.
  upload_now();
  ASSERT_EQ(cold_end("/a"), 5u);
  EXPECT_EQ(counts(), both(0, 7));
  ASSERT_EQ(submit(make_append("/a", "bravo")).failure, errc::ok);
  EXPECT_EQ(counts(), both(5, 12));
  ASSERT_EQ(submit(streams::delete_command{"/b", 0, 0}).failure, errc::ok);
  EXPECT_EQ(counts(), both(5, 10));
  // A stream created again at the path of one uploaded counts from its new start.
  ASSERT_EQ(submit(streams::delete_command{"/a", 0, 0}).failure, errc::ok);
  EXPECT_EQ(counts(), both(0, 0));
  ASSERT_EQ(submit(make_create("/a", "text/plain", "abc")).failure, errc::ok);
  EXPECT_EQ(counts(), both(3, 3));
}

TEST_F(cold_mover_test, a_stream_that_expires_with_no_command_leaves_the_counts_at_the_first_pass_after) {
  streams::create_command c = make_create("/e", "text/plain", "expiring");
  c.expiry.ttl_seconds = 2;
  ASSERT_EQ(submit(c).failure, errc::ok);
  ASSERT_EQ(submit(make_create("/k", "text/plain", "kept")).failure, errc::ok);
  auto pass_and_count = [&] {
    return on_loop([&] {
      part_->mover()->pass();
      return part_->mover()->local_bytes();
    });
  };
  EXPECT_EQ(pass_and_count(), 12u);
  // An append renews its TTL: at its first expiry time the stream is still there (and goes on counting).
  clock_.advance(std::chrono::seconds(1));
  ASSERT_EQ(submit(make_append("/e", "+", streams::testing::t0 + 1000)).failure, errc::ok);
  clock_.advance(std::chrono::milliseconds(1500));
  EXPECT_EQ(pass_and_count(), 13u);
  clock_.advance(std::chrono::seconds(1));
  EXPECT_EQ(on_loop([&] { return part_->mover()->local_bytes(); }), 13u);  // nothing told the mover
  EXPECT_EQ(pass_and_count(), 4u);
}

TEST_F(cold_mover_test, a_reclaim_frees_the_oldest_segments_of_interleaved_streams) {
  // Four streams written in turn: every segment holds records of each. Forgetting whole streams would
  // free no segment; forgetting the oldest segments of all of them frees those segments.
  close();
  constexpr std::uint64_t keep = 96 * 1024;
  open(/*checkpoint_bytes=*/0, /*local_budget=*/0, keep);
  const std::vector<std::string> paths{"/s0", "/s1", "/s2", "/s3"};
  for (const auto& p : paths) ASSERT_EQ(submit(make_create(p)).failure, errc::ok);
  std::map<std::string, std::string> all;
  for (int i = 0; i < 48; ++i) {
    for (const auto& p : paths) {
      std::string body(1000, static_cast<char>('a' + i % 26));
      body += p + std::to_string(i);
      all[p] += body;
      ASSERT_EQ(submit(make_append(p, body)).failure, errc::ok);
    }
  }
  const std::size_t segments_before = segment_files();
  upload_now();
  on_loop([&] {
    part_->mover()->pass();
    return 0;
  });
  ASSERT_EQ(submit(streams::expire_command{"/none", 0}).failure, errc::ok);
  const cold_mover_stats st = on_loop([&] { return part_->mover()->stats(); });
  EXPECT_LE(st.held_bytes, keep);
  // Every stream gave its oldest records, none all of them.
  for (const auto& p : paths) {
    const std::uint64_t held_from = on_loop([&] { return part_->machine().log_of(p)->held_from().value(); });
    EXPECT_GT(held_from, 0u) << p;
    EXPECT_LT(held_from, all[p].size()) << p;
  }
  // The segments of the forgotten records go (16 KiB each; about 96 KiB stay, plus the active one and
  // the partly held ones at either end). Counted in bytes: the log rolls early onto a prepared segment
  // when one is ready, so how many segments the kept records span depends on the spare thread's timing.
  const std::uint64_t bound = keep + 3 * 16 * 1024;
  wait_until([&] { return segment_bytes() <= bound; });
  EXPECT_LE(segment_bytes(), bound) << "in " << segment_files() << " segments, of " << segments_before;
  EXPECT_LT(segment_files(), segments_before);
  for (const auto& p : paths) EXPECT_EQ(read_through(p), all[p]) << p;
}

TEST_F(cold_mover_test, a_reclaim_within_the_checkpoint_interval_leaves_its_checkpoint_to_a_later_pass) {
  close();
  constexpr std::uint64_t keep = 16 * 1024;
  open(/*checkpoint_bytes=*/0, /*local_budget=*/0, keep);
  ASSERT_EQ(submit(make_create("/s")).failure, errc::ok);
  auto write = [&](int n) {
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(submit(make_append("/s", std::string(1000, 'x'))).failure, errc::ok);
  };
  auto reclaim = [&] {
    upload_now();  // its pass reclaims what the last one uploaded
    on_loop([&] {
      part_->mover()->pass();
      return 0;
    });
    ASSERT_EQ(submit(streams::expire_command{"/none", 0}).failure, errc::ok);
  };
  write(64);
  reclaim();
  // The first reclaim's checkpoint is asked for at once, and deletes the segments forgotten.
  wait_until([&] { return segment_bytes() <= keep + 3 * 16 * 1024; });
  ASSERT_LE(segment_bytes(), keep + 3 * 16 * 1024);
  // Within the interval: a second reclaim forgets, but no checkpoint deletes their segments yet.
  const std::uint64_t reclaims = on_loop([&] { return part_->mover()->stats().reclaims; });
  write(64);
  reclaim();
  EXPECT_GT(on_loop([&] { return part_->mover()->stats().reclaims; }), reclaims);
  const std::uint64_t held_on_disk = segment_bytes();
  EXPECT_GT(held_on_disk, keep + 3 * 16 * 1024);
  // A pass once it has passed asks for the owed checkpoint.
  clock_.advance(std::chrono::milliseconds(1000));
  on_loop([&] {
    part_->mover()->pass();
    return 0;
  });
  wait_until([&] { return segment_bytes() <= keep + 3 * 16 * 1024; });
  EXPECT_LE(segment_bytes(), keep + 3 * 16 * 1024) << "of " << held_on_disk;
}

TEST_F(cold_mover_test, a_json_streams_reads_from_objects_end_at_message_boundaries) {
  close();
  open(/*checkpoint_bytes=*/0, /*local_budget=*/0, /*keep_bytes=*/1024);
  ASSERT_EQ(submit(make_create("/j", "application/json")).failure, errc::ok);
  // Records of three messages each, whose strings hold commas and brackets; a read returns at most 4096
  // bytes, which cuts through messages unless it ends at a boundary.
  std::string all;
  for (int i = 0; i < 40; ++i) {
    std::string record;
    for (int m = 0; m < 3; ++m) {
      record += "{\"i\":" + std::to_string(i * 3 + m) + ",\"s\":\"" + std::string(150 + 37 * m, 'x') +
                ", ]} \\\" [\"},";
    }
    streams::append_command c = make_append("/j", record);
    c.content_type = "application/json";
    c.body.messages = 3;
    ASSERT_EQ(submit(c).o.code, streams::errc::ok);
    all += record;
  }
  upload_now();
  ASSERT_EQ(cold_end("/j"), all.size());
  on_loop([&] {
    part_->mover()->pass();
    return 0;
  });
  ASSERT_GT(on_loop([&] { return part_->machine().log_of("/j")->held_from().value(); }), all.size() / 2);
  std::vector<std::string> chunks;
  EXPECT_EQ(read_through("/j", &chunks), all);
  ASSERT_GT(chunks.size(), 3u);
  for (const std::string& chunk : chunks) {
    EXPECT_EQ(streams::whole_messages_prefix(chunk), chunk.size()) << chunk.substr(chunk.size() - 40);
  }
  // Each record went whole into its object: an extent (several records of one object) never ends inside
  // a message.
  on_loop([&] {
    for (std::uint64_t at = 0; auto where = part_->cold_index().find("/j", streams::stream_offset(at));) {
      const std::uint64_t end = where->extent->end.value();
      EXPECT_EQ(streams::whole_messages_prefix(std::string_view(all).substr(0, end)), end);
      at = end;
    }
    return 0;
  });
}

// A JSON record larger than the object target (20 MiB against 1 MiB) goes whole into an object of its
// own, so a read from the bucket that starts in it answers the whole message.
TEST_F(cold_mover_test, a_json_record_larger_than_an_object_target_is_read_whole_from_the_bucket) {
  close();
  open(/*checkpoint_bytes=*/0, /*local_budget=*/0, /*keep_bytes=*/1024);
  ASSERT_EQ(submit(make_create("/big", "application/json")).failure, errc::ok);
  const std::string small = "{\"n\":1},";
  const std::string large = "{\"s\":\"" + std::string(20u << 20, 'L') + "\"},";
  for (const std::string* record : {&small, &large, &small}) {
    streams::append_command c = make_append("/big", *record);
    c.content_type = "application/json";
    c.body.messages = 1;
    ASSERT_EQ(submit(c).o.code, streams::errc::ok);
  }
  const std::uint64_t total = 2 * small.size() + large.size();
  for (int pass = 0; pass < 4 && cold_end("/big") != total; ++pass) upload_now();  // a pass scans 1 MiB
  ASSERT_EQ(cold_end("/big"), total);
  on_loop([&] {
    part_->mover()->pass();
    return 0;
  });
  ASSERT_GT(on_loop([&] { return part_->machine().log_of("/big")->held_from().value(); }), small.size());
  std::vector<std::string> chunks;
  const std::string got = read_through("/big", &chunks);
  EXPECT_EQ(got.size(), total) << got.substr(got.size() > 200 ? got.size() - 200 : 0);
  EXPECT_TRUE(got == small + large + small);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[1].size(), large.size());  // the large message in one read
}

TEST_F(cold_mover_test, over_its_share_a_shard_forgets_what_is_in_objects_and_reads_it_from_there) {
  close();
  open(/*checkpoint_bytes=*/0, /*local_budget=*/0, /*keep_bytes=*/8 * 1024);
  ASSERT_EQ(submit(make_create("/z")).failure, errc::ok);
  ASSERT_EQ(submit(make_create("/j", "application/json")).failure, errc::ok);
  std::string all;
  for (int i = 0; i < 60; ++i) {
    std::string body(1000, static_cast<char>('a' + i % 26));
    body += std::to_string(i);
    all += body;
    ASSERT_EQ(submit(make_append("/z", body)).failure, errc::ok);
  }
  streams::append_command json = make_append("/j", "1,2,3,");
  json.content_type = "application/json";
  json.body.messages = 3;
  const streams::outcome json_o = submit(json).o;
  ASSERT_EQ(json_o.code, streams::errc::ok);
  const std::size_t segments_before = segment_files();
  upload_now();
  ASSERT_EQ(cold_end("/z"), all.size());
  // The next pass finds the shard over its share: the records go, oldest segment first, and a checkpoint
  // deletes their segments.
  on_loop([&] {
    part_->mover()->pass();
    return 0;
  });
  ASSERT_EQ(submit(streams::expire_command{"/none", 0}).failure, errc::ok);
  const cold_mover_stats st = on_loop([&] { return part_->mover()->stats(); });
  EXPECT_EQ(st.reclaims, 1u);
  // Oldest segments first, until the held bytes are within the share.
  EXPECT_GE(st.forgotten_bytes, all.size() - 8 * 1024);
  EXPECT_LE(st.held_bytes, 8u * 1024);
  EXPECT_GE(on_loop([&] { return part_->machine().log_of("/z")->held_from().value(); }),
            all.size() - 8 * 1024);
  // The checkpoint is written, and its segments deleted, on the log's thread: wait for it.
  wait_until([&] { return segment_files() < segments_before; });
  EXPECT_LT(segment_files(), segments_before);
  EXPECT_EQ(read_through("/z"), all);
  EXPECT_EQ(read_through("/j"), "1,2,3,");

  // After a restart (the checkpoint says where the held records begin) every byte still reads back, and
  // what is appended later joins them.
  close();
  open(0, 0, 8 * 1024);
  EXPECT_EQ(read_through("/z"), all);
  ASSERT_EQ(submit(make_append("/z", "tail")).failure, errc::ok);
  EXPECT_EQ(read_through("/z"), all + "tail");
}

TEST(cold_state, a_checkpoint_without_cold_bytes_is_the_state_machine_snapshot_alone) {
  streams::state_machine sm;
  (void)sm.apply(make_create("/x"));
  tier::cold_index index;
  const auto plain = sm.snapshot();
  EXPECT_EQ(encode_checkpoint(plain, index), plain);  // readable by a weir without a cold tier
  auto parts = decode_checkpoint(plain);
  ASSERT_TRUE(parts.has_value());
  EXPECT_EQ(parts->sm.size(), plain.size());
  EXPECT_TRUE(parts->index.empty());
  // A damaged container is an error, never a crash.
  std::vector<std::byte> bad = {std::byte{'w'}, std::byte{'e'}, std::byte{'i'}, std::byte{'r'},
                                std::byte{'c'}, std::byte{'o'}, std::byte{'l'}, std::byte{'d'},
                                std::byte{1},   std::byte{0x7f}};
  EXPECT_FALSE(decode_checkpoint(bad).has_value());
}

}  // namespace
}  // namespace weir::replica
