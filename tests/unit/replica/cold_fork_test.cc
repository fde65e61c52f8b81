// A fork whose source is another shard's, reading inherited bytes that only the bucket holds (the source's
// shard reclaimed them before the fork was made): the bytes are placed by the source shard's index
// (partition::locate_objects, asked through attach_foreign_objects as the node asks the owner's loop) and
// read off the loop like the source's own. Two partitions (shards 0 and 1) on one loop, the in-memory
// object store; shard 0 uploads and reclaims.
#include <gtest/gtest.h>

#include <future>
#include <string>

#include "replica/cold_mover.h"
#include "replica/placement.h"
#include "streams/json_stored.h"
#include "tier/cold_fetcher.h"
#include "tier/hot_tier.h"
#include "tier/mem_object_store.h"
#include "unit/replica/partition_on_loop.h"
#include "unit/streams/command_builders.h"

namespace weir::replica {
namespace {

using streams::testing::make_append;
using streams::testing::make_create;
using testing::quiet_host;

// A stream path that a 2-shard node places on `shard`.
std::string path_on(unsigned shard, const std::string& stem) {
  for (int i = 0;; ++i) {
    std::string p = "/" + stem + std::to_string(i);
    if (owner_index(p, 2) == shard) return p;
  }
}

class cold_fork_test : public testing::partition_on_loop {
 protected:
  void SetUp() override {
    loop_ = std::make_unique<io::event_loop>(0);
    ex_ = std::make_unique<raft::loop_executor>(*loop_);
    thread_ = std::thread([l = loop_.get()] { l->run(); });
    on_loop([&] {
      partition_options po;
      po.checkpoint_bytes = 0;
      part_ = std::make_unique<partition>(*ex_, clock_, po, host_);
      po.core = 1;
      other_ = std::make_unique<partition>(*ex_, clock_, po, host_);
      wal_options wo;
      wo.data_dir = "/data";
      wo.sync = storage::sync_policy{};
      wo.segment_bytes = 16 * 1024;
      auto rec = open_durable_store(env_, wo, {part_.get(), other_.get()}, readers_);
      EXPECT_TRUE(rec.has_value()) << rec.err().reason;
      auto term = next_cold_term(env_, "/data/wal/core-0");
      EXPECT_TRUE(term.has_value());
      cold_mover_options o;
      o.upload.group = tier::cold_group(0);
      o.upload.term = tier::leader_term(*term);
      o.upload.target_object_bytes = target_object_bytes_;
      o.upload.max_age = std::chrono::hours(1);  // objects go when the test flushes
      o.scan_interval = std::chrono::hours(1);   // passes run when the test asks
      o.keep_bytes = 8 * 1024;
      raft::executor* ex = ex_.get();
      part_->attach_cold(
          o,
          [this, ex](std::string key, tier::shared_object_bytes bytes, tier::uploader::put_done done) {
            auto r = store_.put(key, *bytes);
            ex->post([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
          },
          0);
      // The store answers on the loop's next turn, as the node's workers post their completions.
      auto fetch = [this, ex](std::string key, std::uint64_t size, std::uint64_t position,
                              std::uint64_t length, partition::object_done done) {
        auto got = fetcher_.read(key, size, position, length);
        ex->post([done = std::move(done), got = std::move(got)]() mutable { done(std::move(got)); });
      };
      part_->attach_object_reads(fetch);
      other_->attach_object_reads(fetch);
      auto lookup = [this, ex](std::string key, std::uint64_t size, std::string stream,
                               streams::stream_offset at, partition::record_done done) {
        auto got = fetcher_.record_at(key, size, stream, at);
        ex->post([done = std::move(done), got = std::move(got)]() mutable { done(std::move(got)); });
      };
      part_->attach_record_lookups(lookup);
      other_->attach_record_lookups(lookup);
      // As the node routes it: the owner of the stream (shard 0 here) is asked on its loop, and the answer
      // comes back on the asking shard's.
      other_->attach_foreign_objects([this, ex](std::string stream, streams::stream_offset from,
                                                partition::located_fn done) {
        ++foreign_lookups_;
        ex->post([this, ex, stream = std::move(stream), from, done = std::move(done)]() mutable {
          auto where = part_->locate_objects(stream, from);
          ex->post([done = std::move(done), where = std::move(where)]() mutable { done(std::move(where)); });
        });
      });
      part_->start_cold();
      return 0;
    });
  }
  void TearDown() override {
    if (loop_) {
      on_loop([&] {
        other_->stop();
        other_.reset();
        return 0;
      });
    }
    close();
  }
  durable_result submit_to(partition& p, const streams::command& c) {
    std::promise<durable_result> done;
    loop_->post([&] { (void)p.submit(c, [&](durable_result& r) { done.set_value(r); }); });
    return done.get_future().get();
  }
  // Shard 0's bytes go to objects, and the next pass finds it over its share: it forgets them.
  void upload_and_reclaim() {
    on_loop([&] {
      part_->mover()->pass();
      part_->mover()->flush();
      return 0;
    });
    on_loop([] { return 0; });  // the put's answer, then the report and the index record
    ASSERT_EQ(submit(streams::expire_command{"/none", 0}).failure, errc::ok);
    on_loop([&] {
      part_->mover()->pass();
      return 0;
    });
    ASSERT_EQ(submit(streams::expire_command{"/none", 0}).failure, errc::ok);
  }
  std::uint64_t held_from(const std::string& path) {
    return on_loop([&] { return part_->machine().log_of(path)->held_from().value(); });
  }
  // Shard 0's bytes go to objects, and no pass comes after: it keeps their records. Returns once the
  // index holds `path` up to `end` (its index records applied).
  void upload_and_keep(const std::string& path, std::uint64_t end) {
    on_loop([&] {
      part_->mover()->pass();
      part_->mover()->flush();
      return 0;
    });
    for (int turn = 0; turn < 1000; ++turn) {
      const std::uint64_t cold_end = on_loop(
          [&] { return part_->cold_index().cold_end(path).value_or(streams::stream_offset(0)).value(); });
      if (cold_end >= end) return;
      ASSERT_EQ(submit(streams::expire_command{"/none", 0}).failure, errc::ok);
    }
    FAIL() << path << " never reached " << end << " in the index";
  }
  // Creates `fork` on shard 1 from `source` on shard 0 (at its tail), the way the server does: the retain
  // on the source's shard, then the create with its resolution on the fork's.
  void fork_across(const std::string& source, const std::string& fork) {
    streams::fork_retain_command r;
    r.source = source;
    const durable_result retained = submit(r);
    ASSERT_EQ(retained.failure, errc::ok);
    ASSERT_EQ(retained.o.code, streams::errc::ok);
    ASSERT_TRUE(retained.o.resolution.has_value());
    streams::create_command c;
    c.path = fork;
    streams::fork_spec f;
    f.source = source;
    f.resolved = *retained.o.resolution;
    f.resolved.retained = true;
    c.fork = std::move(f);
    const durable_result created = submit_to(*other_, c);
    ASSERT_EQ(created.failure, errc::ok);
    ASSERT_EQ(created.o.code, streams::errc::ok);
  }
  // The retain of `source` at `point` as partition `p` prepares it before proposing it.
  result<streams::fork_retain_command> prepared(partition& p, const std::string& source, std::uint64_t point,
                                                std::uint64_t sub_offset) {
    std::promise<result<streams::fork_retain_command>> ready;
    loop_->post([&] {
      streams::fork_retain_command c;
      c.source = source;
      c.offset = streams::stream_offset(point);
      c.sub_offset = sub_offset;
      p.prepare_retain(c, [&](result<streams::fork_retain_command> r) { ready.set_value(std::move(r)); });
    });
    return ready.get_future().get();
  }
  // Where the record of `source` beginning at `point` ends, as the retain carries it (what the server
  // asks before a retain), and "!" when it decides; "<error>" or "<none>" otherwise.
  std::string point_record_of(const std::string& source, std::uint64_t point, std::uint64_t sub_offset,
                              partition* p = nullptr) {
    auto r = prepared(p ? *p : *part_, source, point, sub_offset);
    if (!r) return "<error>";
    const std::string decides = r->record_decides ? "!" : "";
    if (!r->point_record) return "<none>" + decides;
    return std::to_string(r->point_record->end.value()) + "/" + std::to_string(r->point_record->messages) +
           decides;
  }
  std::string bucket_bytes(partition& p, const std::string& stream, std::uint64_t from, std::uint64_t n) {
    std::promise<std::string> got;
    loop_->post([&] {
      p.read_bucket_bytes(stream, streams::stream_offset(from), n, [&](result<std::string> bytes) {
        got.set_value(bytes ? *bytes : "<failed: " + bytes.err().reason + ">");
      });
    });
    return got.get_future().get();
  }
  std::uint64_t target_object_bytes_ = 1 << 20;
  tier::mem_object_store store_;
  tier::cold_fetcher fetcher_{store_};
  quiet_host host_;
  std::unique_ptr<partition> other_;  // shard 1: the forks (on loop_)
  int foreign_lookups_ = 0;           // the loop's
};

TEST_F(cold_fork_test, a_fork_on_another_shard_reads_its_sources_reclaimed_bytes_from_the_bucket) {
  const std::string src = path_on(0, "src"), fork = path_on(1, "fork");
  ASSERT_EQ(submit(make_create(src)).failure, errc::ok);
  std::string all;
  for (int i = 0; i < 60; ++i) {
    std::string body(1000, static_cast<char>('a' + i % 26));
    body += std::to_string(i);
    all += body;
    ASSERT_EQ(submit(make_append(src, body)).failure, errc::ok);
  }
  upload_and_reclaim();
  ASSERT_GE(held_from(src), all.size() - 8 * 1024);  // most of it only in the bucket
  fork_across(src, fork);
  ASSERT_EQ(submit_to(*other_, make_append(fork, "+own")).failure, errc::ok);
  EXPECT_EQ(read_through(*other_, fork, 4096, nullptr), all + "+own");
  EXPECT_GT(on_loop([&] { return foreign_lookups_; }), 0);
  // Its own reads never needed another shard.
  const int lookups = on_loop([&] { return foreign_lookups_; });
  std::promise<std::string> own;
  on_loop([&] {
    streams::read_result rr = part_->read_planned(src, streams::stream_offset(0), 4096);
    EXPECT_TRUE(rr.plan.in_objects.has_value());
    (void)part_->read_cold(
        src, std::move(rr),
        [&](streams::read_result& got, status io) {
          own.set_value(io && !got.plan.slices.empty() ? std::string(got.plan.slices[0].view()) : "<failed>");
        },
        false);
    return 0;
  });
  EXPECT_EQ(own.get_future().get(), all.substr(0, 4096));
  EXPECT_EQ(on_loop([&] { return foreign_lookups_; }), lookups);
}

TEST_F(cold_fork_test, a_source_with_forks_leaves_the_disk_and_its_forks_read_it_from_the_bucket) {
  const std::string src = path_on(0, "src"), fork = path_on(1, "fork"), near = path_on(0, "near");
  ASSERT_EQ(submit(make_create(src)).failure, errc::ok);
  std::string all;
  auto append = [&](int i) {
    std::string body(1000, static_cast<char>('a' + i % 26));
    body += std::to_string(i);
    all += body;
    ASSERT_EQ(submit(make_append(src, body)).failure, errc::ok);
  };
  for (int i = 0; i < 30; ++i) append(i);
  // Forks at the tail, on the other shard and on the source's own, before anything is in the bucket.
  fork_across(src, fork);
  streams::fork_retain_command r;
  r.source = src;
  const durable_result retained = submit(r);
  ASSERT_EQ(retained.o.code, streams::errc::ok);
  streams::create_command c = make_create(near);
  c.fork = streams::fork_spec{src, std::nullopt, 0, *retained.o.resolution};
  c.fork->resolved.retained = true;
  ASSERT_EQ(submit(c).o.code, streams::errc::ok);
  const std::string at_fork = all;
  for (int i = 30; i < 60; ++i) append(i);
  ASSERT_EQ(submit_to(*other_, make_append(fork, "+fork")).failure, errc::ok);
  ASSERT_EQ(submit(make_append(near, "+near")).failure, errc::ok);

  upload_and_reclaim();
  // The source's records left the disk although forks read through it.
  ASSERT_GE(held_from(src), all.size() - 8 * 1024);
  EXPECT_EQ(read_through(*other_, fork, 4096, nullptr), at_fork + "+fork");
  EXPECT_EQ(read_through(*part_, near, 4096, nullptr), at_fork + "+near");
  EXPECT_EQ(read_through(*part_, src, 4096, nullptr), all);
  EXPECT_GT(on_loop([&] { return foreign_lookups_; }), 0);
}

TEST_F(cold_fork_test, a_json_fork_on_another_shard_reads_whole_messages_from_the_bucket) {
  const std::string src = path_on(0, "json"), fork = path_on(1, "jfork");
  ASSERT_EQ(submit(make_create(src, "application/json")).failure, errc::ok);
  std::string all;
  for (int i = 0; i < 60; ++i) {
    // Several messages per append, longer than a read's size now and then.
    std::string body;
    for (int m = 0; m < 3; ++m) {
      body += "{\"n\":" + std::to_string(i * 3 + m) + ",\"s\":\"" +
              std::string(i % 7 == 0 ? 5000 : 300, static_cast<char>('a' + m)) + "\"},";
    }
    streams::append_command a = make_append(src, body);
    a.content_type = "application/json";
    a.body.messages = 3;
    ASSERT_EQ(submit(a).o.code, streams::errc::ok);
    all += body;
  }
  upload_and_reclaim();
  ASSERT_GT(held_from(src), all.size() / 2);  // most of it only in the bucket
  fork_across(src, fork);
  std::vector<std::string> chunks;
  EXPECT_EQ(read_through(*other_, fork, 4096, &chunks), all);
  // Every answer ends at a message boundary, as the source's own reads from the bucket do.
  for (const std::string& chunk : chunks) {
    EXPECT_EQ(streams::whole_messages_prefix(chunk), chunk.size()) << chunk.substr(0, 40);
  }
  EXPECT_GT(on_loop([&] { return foreign_lookups_; }), 0);
}

// Objects of about 3 KB, records of about 1 KB: a byte stream's records are cut across objects.
class cold_fork_small_objects_test : public cold_fork_test {
 protected:
  void SetUp() override {
    target_object_bytes_ = 3000;
    cold_fork_test::SetUp();
  }
};

TEST_F(cold_fork_small_objects_test, a_record_only_the_bucket_holds_is_found_and_read_whole_across_objects) {
  const std::string src = path_on(0, "src");
  ASSERT_EQ(submit(make_create(src)).failure, errc::ok);
  std::vector<std::pair<std::uint64_t, std::string>> records;  // begin, bytes
  std::uint64_t at = 0;
  for (int i = 0; i < 20; ++i) {
    std::string body(1000 + i, static_cast<char>('a' + i % 26));
    body += std::to_string(i);
    records.emplace_back(at, body);
    at += body.size();
    ASSERT_EQ(submit(make_append(src, body)).failure, errc::ok);
  }
  upload_and_reclaim();
  ASSERT_GE(held_from(src), at - 8 * 1024);  // the first records are only in the bucket
  auto listed = store_.list("", "", 1000);
  ASSERT_TRUE(listed.has_value());
  ASSERT_GE(listed->objects.size(), 5u);
  std::size_t checked = 0;
  for (const auto& [begin, body] : records) {
    if (begin + body.size() > held_from(src)) break;
    // Found from its object's record table, whatever object it ends in; read back whole from both
    // partitions (the fork's reads its source's bytes through the owner's index).
    EXPECT_EQ(point_record_of(src, begin, 1), std::to_string(begin + body.size()) + "/0") << begin;
    EXPECT_EQ(bucket_bytes(*part_, src, begin, body.size()), body) << begin;
    EXPECT_EQ(bucket_bytes(*other_, src, begin, body.size()), body) << begin;
    // One byte in: no record begins there.
    EXPECT_EQ(point_record_of(src, begin + 1, 1), "<none>");
    ++checked;
  }
  EXPECT_GE(checked, 10u);
  // A byte stream's point needs no record without a sub-offset; a point past the bytes in objects never.
  EXPECT_EQ(point_record_of(src, records[3].first, 0), "<none>");
  EXPECT_EQ(point_record_of(src, at - 1, 1), "<none>");
  // The retain the server then proposes: the cut record's bytes are to be read from the bucket.
  streams::fork_retain_command r;
  r.source = src;
  r.offset = streams::stream_offset(records[2].first);
  r.sub_offset = 10;
  r.point_record =
      streams::carried_record{streams::stream_offset(records[2].first + records[2].second.size()), 0};
  const durable_result retained = submit(r);
  ASSERT_EQ(retained.failure, errc::ok);
  ASSERT_EQ(retained.o.code, streams::errc::ok);
  ASSERT_TRUE(retained.o.sub_record_in_objects.has_value());
  EXPECT_EQ(retained.o.sub_record_in_objects->from, streams::stream_offset(records[2].first));
  // Without the record, the same retain is refused (the index alone cannot tell where records begin).
  r.point_record.reset();
  EXPECT_EQ(submit(r).o.code, streams::errc::bad_sub_offset);
  // Records in bytes in objects that this node still keeps (new ones, uploaded with no reclaim after
  // them): taken from its own records, no GET.
  std::uint64_t tail = at;
  std::vector<std::pair<std::uint64_t, std::string>> fresh;
  for (int i = 0; i < 3; ++i) {
    std::string body(1000 + i, static_cast<char>('v' + i));
    fresh.emplace_back(tail, body);
    tail += body.size();
    ASSERT_EQ(submit(make_append(src, body)).failure, errc::ok);
  }
  upload_and_keep(src, tail);
  std::size_t kept = 0;
  for (const auto& [begin, body] : fresh) {
    if (begin < held_from(src)) continue;
    const std::uint64_t gets = store_.requests(tier::store_op::get);
    EXPECT_EQ(point_record_of(src, begin, 1), std::to_string(begin + body.size()) + "/0") << begin;
    EXPECT_EQ(store_.requests(tier::store_op::get), gets) << begin;
    ++kept;
  }
  EXPECT_GE(kept, 1u);
}

// A fork of a fork whose point lies in bytes the first fork inherited from another shard: that shard
// forgets the records of its bytes in objects on its own schedule, so the retain carries the record
// beginning at the point (read from the source's records while they are kept, else from the bucket)
// and that record alone decides (fork_retain_command::record_decides): a retain prepared while the
// records were kept is applied alike after they are forgotten.
TEST_F(cold_fork_test, a_fork_of_a_fork_across_shards_is_decided_by_the_record_it_carries) {
  const std::string src = path_on(0, "json"), fork = path_on(1, "jfork");
  ASSERT_EQ(submit(make_create(src, "application/json")).failure, errc::ok);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> records;  // begin, end
  std::uint64_t at = 0;
  for (int i = 0; i < 40; ++i) {
    std::string body;
    for (int m = 0; m < 2; ++m)
      body += "{\"n\":" + std::to_string(i * 2 + m) + ",\"s\":\"" + std::string(500, 'x') + "\"},";
    streams::append_command a = make_append(src, body);
    a.content_type = "application/json";
    a.body.messages = 2;
    ASSERT_EQ(submit(a).o.code, streams::errc::ok);
    records.emplace_back(at, at + body.size());
    at += body.size();
  }
  // The first fork, at the source's tail, is on the other shard; its bytes are all the source's.
  fork_across(src, fork);
  const auto [begin, end] = records[5];
  auto early = prepared(*other_, fork, begin, 0);  // prepared while the source keeps its records
  ASSERT_TRUE(early.has_value());
  EXPECT_TRUE(early->record_decides);
  ASSERT_TRUE(early->point_record.has_value());
  EXPECT_EQ(early->point_record->end.value(), end);
  EXPECT_EQ(early->point_record->messages, 2u);
  // Inside a record: none begins there, so the retain will refuse it.
  EXPECT_EQ(point_record_of(fork, begin + 1, 0, other_.get()), "<none>!");
  // The source's own retains decide by its own records and index, as before.
  EXPECT_EQ(point_record_of(src, begin, 0), "<none>");

  // The source's shard moves its bytes to objects and forgets their records (its fork does not stop it).
  upload_and_reclaim();
  ASSERT_GT(held_from(src), end);
  EXPECT_EQ(submit_to(*other_, *early).o.code, streams::errc::ok);
  // Prepared now: the same record, from the object's record table through the owner's index.
  const int lookups = on_loop([&] { return foreign_lookups_; });
  EXPECT_EQ(point_record_of(fork, begin, 0, other_.get()), std::to_string(end) + "/2!");
  EXPECT_GT(on_loop([&] { return foreign_lookups_; }), lookups);
  EXPECT_EQ(point_record_of(fork, begin + 1, 0, other_.get()), "<none>!");
  // Without its record the retain is refused, at a record's start too.
  streams::fork_retain_command bare = *early;
  bare.point_record.reset();
  EXPECT_EQ(submit_to(*other_, bare).o.code, streams::errc::bad_fork_offset);
  // A sub-offset: the cut record's bytes are read from the bucket.
  auto cut = prepared(*other_, fork, begin, 1);
  ASSERT_TRUE(cut.has_value());
  const durable_result retained = submit_to(*other_, *cut);
  ASSERT_EQ(retained.o.code, streams::errc::ok);
  ASSERT_TRUE(retained.o.sub_record_in_objects.has_value());
  EXPECT_EQ(retained.o.sub_record_in_objects->stream, src);
  EXPECT_EQ(retained.o.sub_record_in_objects->until.value(), end);
}

TEST_F(cold_fork_test, without_a_route_to_the_sources_shard_the_read_fails_rather_than_returns_other_bytes) {
  on_loop([&] {
    other_->attach_foreign_objects({});
    return 0;
  });
  const std::string src = path_on(0, "src"), fork = path_on(1, "fork");
  ASSERT_EQ(submit(make_create(src)).failure, errc::ok);
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(submit(make_append(src, std::string(1000, static_cast<char>('a' + i % 26)))).failure, errc::ok);
  }
  upload_and_reclaim();
  ASSERT_GT(held_from(src), 0u);
  fork_across(src, fork);
  EXPECT_NE(
      read_through(*other_, fork, 4096, nullptr).find("<read failed: no object holds bytes 0 of " + src),
      std::string::npos);
}

}  // namespace
}  // namespace weir::replica
