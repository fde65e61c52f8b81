// A durable node restarted on the same data directory: every acknowledged command comes back from the
// write-ahead log (both cores, a fork whose source lives on the other core, a close, a delete, producer
// state); a torn tail is cut; damage before the tail stops the start and names the file.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "replica/shard_wal.h"
#include "server/node.h"
#include "server/stream_shard.h"
#include "storage/log_writer.h"
#include "streams/command_codec.h"

#include "unit/replica/checkpointed.h"
#include "unit/server/durable_node_fixture.h"
#include "unit/server/http_test_client.h"

namespace weir::server {
namespace {

using test_support::http;
using test_support::reply;

class durable_node_test : public test_support::durable_node_fixture {
 protected:
  static std::string path_on(unsigned core, const std::string& stem) {
    return test_support::path_on(core, stem);
  }
  // How many records `path`'s own log holds (asked on its core).
  std::size_t records_held(const std::string& path) {
    stream_shard& s = n_->owner_of(path);
    std::promise<std::size_t> p;
    auto f = p.get_future();
    s.loop().post([&] { p.set_value(s.part().machine().records_held(path)); });
    return f.get();
  }
  // Waits (10 s at most) until `path`'s core has written a checkpoint and has none under way.
  bool checkpointed(const std::string& path) {
    stream_shard& s = n_->owner_of(path);
    return replica::testing::checkpointed(s.loop(), s.part());
  }
};

const std::map<std::string, std::string> text = {{"Content-Type", "text/plain"}};

TEST_F(durable_node_test, acknowledged_commands_survive_a_restart) {
  ASSERT_TRUE(start().has_value());
  std::string a = path_on(0, "a"), b = path_on(1, "b"), fork = path_on(1, "fork"), gone = path_on(0, "gone");
  ASSERT_EQ(http(port_, "PUT", a, text, "hello").status, 201);
  ASSERT_EQ(http(port_, "POST", a, test_support::producer_headers("text/plain", 0), " world").status, 200);
  ASSERT_EQ(http(port_, "PUT", b, {{"Content-Type", "application/json"}}, "[1,2]").status, 201);
  ASSERT_EQ(
      http(port_, "POST", b, {{"Content-Type", "application/json"}, {"Stream-Closed", "true"}}, "{\"x\":3}")
          .status,
      204);
  ASSERT_EQ(http(port_, "PUT", fork,
                 {{"Stream-Forked-From", a}, {"Stream-Fork-Offset", "0000000000000000_0000000000000004"}})
                .status,
            201);
  ASSERT_EQ(http(port_, "POST", fork, text, "!").status, 204);
  ASSERT_EQ(http(port_, "PUT", gone, text, "x").status, 201);
  ASSERT_EQ(http(port_, "DELETE", gone).status, 204);
  std::string tail_a = http(port_, "HEAD", a).headers["stream-next-offset"];
  stop();

  ASSERT_TRUE(start().has_value());
  reply ra = http(port_, "GET", a);
  EXPECT_EQ(ra.status, 200);
  EXPECT_EQ(ra.body, "hello world");
  EXPECT_EQ(ra.headers["stream-next-offset"], tail_a);
  reply rb = http(port_, "GET", b);
  EXPECT_EQ(rb.body, "[1,2,{\"x\":3}]");
  EXPECT_EQ(rb.headers["stream-closed"], "true");
  EXPECT_EQ(http(port_, "GET", fork).body, "hell!");  // inherited data stitched from the other core
  EXPECT_EQ(http(port_, "GET", gone).status, 404);
  // Producer state came back too: a retry of seq 0 is a duplicate, seq 1 is accepted.
  EXPECT_EQ(http(port_, "POST", a, test_support::producer_headers("text/plain", 0), " world").status, 204);
  EXPECT_EQ(http(port_, "POST", a, test_support::producer_headers("text/plain", 1), "!").status, 200);
  EXPECT_EQ(http(port_, "GET", a).body, "hello world!");
}

TEST_F(durable_node_test, a_torn_tail_is_cut_and_the_node_starts) {
  ASSERT_TRUE(start().has_value());
  std::string a = path_on(0, "a");
  ASSERT_EQ(http(port_, "PUT", a, text, "kept").status, 201);
  stop();
  {
    std::ofstream f(segment(0), std::ios::binary | std::ios::app);
    f << std::string(7, '\x5a');  // half a record header: a write the crash interrupted
  }
  ASSERT_TRUE(start().has_value());
  EXPECT_EQ(http(port_, "GET", a).body, "kept");
  EXPECT_EQ(http(port_, "POST", a, text, "+").status, 204);
  stop();
  ASSERT_TRUE(start().has_value());
  EXPECT_EQ(http(port_, "GET", a).body, "kept+");
}

TEST_F(durable_node_test, damage_before_the_tail_stops_the_start_naming_the_file) {
  ASSERT_TRUE(start().has_value());
  std::string a = path_on(0, "a");
  ASSERT_EQ(http(port_, "PUT", a, text, "first").status, 201);
  ASSERT_EQ(http(port_, "POST", a, text, "second").status, 204);
  stop();
  std::string seg = segment(0);
  {
    std::fstream f(seg, std::ios::binary | std::ios::in | std::ios::out);
    f.seekg(0, std::ios::end);
    auto size = static_cast<std::streamoff>(f.tellg());
    // A byte inside the first record's payload (the second record follows it intact).
    f.seekp(size / 2 - 20);
    f.put('\x01');
  }
  status st = start();
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.err().reason.find("core-0"), std::string::npos) << st.err().reason;
}

// Forks reference their source's records (PROTOCOL.md 4.2, pointer-based stitching): after a restart,
// from the log alone and then from checkpoints, a chain of forks across both cores (one of them at an
// offset inside a record, its sources soft-deleted) reads as before and holds only its own records.
TEST_F(durable_node_test, a_chain_of_forks_across_cores_survives_restarts_holding_only_its_own_records) {
  cfg_.checkpoint_bytes = 0;  // first restart: everything replayed from the log
  ASSERT_TRUE(start().has_value());
  const std::string src = path_on(0, "src"), f1 = path_on(1, "f1"), f2 = path_on(0, "f2"),
                    f3 = path_on(1, "f3");
  ASSERT_EQ(http(port_, "PUT", src, text, "r0;").status, 201);
  std::string want_src = "r0;";
  for (int i = 1; i < 200; ++i) {
    const std::string body = "r" + std::to_string(i) + ";";
    ASSERT_EQ(http(port_, "POST", src, text, body).status, 204);
    want_src += body;
  }
  ASSERT_EQ(http(port_, "PUT", f1, {{"Stream-Forked-From", src}}).status, 201);
  ASSERT_EQ(http(port_, "POST", f1, text, "+f1").status, 204);
  const std::string want_f1 = want_src + "+f1";
  // f2: a fork of f1 inside its first inherited record ("r0;" cut after "r0").
  ASSERT_EQ(http(port_, "PUT", f2,
                 {{"Stream-Forked-From", f1}, {"Stream-Fork-Offset", "0000000000000000_0000000000000002"}})
                .status,
            201);
  ASSERT_EQ(http(port_, "POST", f2, text, "+f2").status, 204);
  const std::string want_f2 = "r0+f2";
  ASSERT_EQ(http(port_, "PUT", f3, {{"Stream-Forked-From", f1}}).status, 201);
  const std::string want_f3 = want_f1;
  ASSERT_EQ(http(port_, "POST", src, text, "later").status, 204);  // after every fork point
  ASSERT_EQ(http(port_, "DELETE", src).status, 204);               // soft: f1 references it
  ASSERT_EQ(http(port_, "DELETE", f1).status, 204);                // soft: f2 and f3 reference it

  auto check = [&](const char* when) {
    SCOPED_TRACE(when);
    EXPECT_EQ(http(port_, "GET", src).status, 410);
    EXPECT_EQ(http(port_, "GET", f1).status, 410);
    EXPECT_EQ(http(port_, "GET", f2).body, want_f2);
    EXPECT_EQ(http(port_, "GET", f3).body, want_f3);
    EXPECT_EQ(http(port_, "PUT", src, text, "again").status, 409);  // held by its forks
    EXPECT_EQ(records_held(src), 201u);
    EXPECT_EQ(records_held(f1), 1u);
    EXPECT_EQ(records_held(f2), 1u);
    EXPECT_EQ(records_held(f3), 0u);
  };
  check("before a restart");
  stop();
  ASSERT_TRUE(start().has_value());
  EXPECT_EQ(n_->recovery().forks_stitched, 3u);
  check("after a restart from the log");

  cfg_.checkpoint_bytes = 1;  // every command is followed by a checkpoint
  stop();
  ASSERT_TRUE(start().has_value());
  ASSERT_EQ(http(port_, "POST", f3, text, "+f3").status, 204);  // a command on each core: checkpoints
  ASSERT_EQ(http(port_, "POST", f2, text, "!").status, 204);
  ASSERT_TRUE(checkpointed(f3));
  ASSERT_TRUE(checkpointed(f2));
  stop();
  cfg_.checkpoint_bytes = 0;
  ASSERT_TRUE(start().has_value());
  EXPECT_EQ(n_->recovery().checkpoints, 2u);
  EXPECT_EQ(n_->recovery().forks_stitched, 3u);  // restored forks are linked to their sources again
  EXPECT_EQ(http(port_, "GET", f2).body, want_f2 + "!");
  EXPECT_EQ(http(port_, "GET", f3).body, want_f3 + "+f3");
  EXPECT_EQ(records_held(f3), 1u);
  EXPECT_EQ(records_held(f1), 1u);
  EXPECT_EQ(http(port_, "GET", src).status, 410);
}

// A crash between the source's fork_retain and the fork's create (two cores) leaves a reference with no
// fork. The start releases it, so deleting the source removes it instead of keeping it soft-deleted.
TEST_F(durable_node_test, a_reference_without_a_fork_is_released_at_start) {
  ASSERT_TRUE(start().has_value());
  std::string src = path_on(0, "src");
  ASSERT_EQ(http(port_, "PUT", src, text, "data").status, 201);
  stop();
  {
    // What the source's core logged before the crash: the retain of a fork that never got created.
    storage::env& e = storage::default_posix_env();
    std::string core0 = dir_ + "/wal/core-0";
    auto rec = storage::recover_log(e, core0, [](const storage::record_view&) { return status{}; });
    ASSERT_TRUE(rec.has_value());
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    auto w = storage::log_writer::open(e, core0, {}, *rec, [](std::function<void()> fn) { fn(); });
    ASSERT_TRUE(w.has_value());
    std::string bytes = streams::encode(streams::fork_retain_command{src, std::nullopt, 0, "", 1});
    (*w)->append(streams::command_record_type, std::as_bytes(std::span(bytes.data(), bytes.size())),
                 [&](result<storage::append_ack> r) {
                   EXPECT_TRUE(r.has_value());
                   std::lock_guard lock(mu);
                   done = true;
                   cv.notify_all();
                 });
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return done; }));
  }
  ASSERT_TRUE(start().has_value());
  EXPECT_EQ(http(port_, "DELETE", src).status, 204);
  EXPECT_EQ(http(port_, "GET", src).status, 404);  // not 410 (soft-deleted, waiting for a fork)
  stop();
  ASSERT_TRUE(start().has_value());  // the release was logged: the replay agrees
  EXPECT_EQ(http(port_, "GET", src).status, 404);
  EXPECT_EQ(http(port_, "PUT", src, text, "again").status, 201);
}

// A create rejected for invalid JSON is not logged, so it must not shift the generations (ETags) of the
// streams created after it: the replay does not see it.
TEST_F(durable_node_test, etags_are_the_same_after_a_restart) {
  ASSERT_TRUE(start().has_value());
  std::string bad = path_on(0, "bad"), good = path_on(0, "good");
  ASSERT_EQ(http(port_, "PUT", bad, {{"Content-Type", "application/json"}}, "[1,").status, 400);
  ASSERT_EQ(http(port_, "PUT", good, text, "data").status, 201);
  std::string etag = http(port_, "GET", good).headers["etag"];
  ASSERT_FALSE(etag.empty());
  stop();
  ASSERT_TRUE(start().has_value());
  EXPECT_EQ(http(port_, "GET", good).headers["etag"], etag);
}

// A data directory keeps the log count it was created with (2 here); a start with another core count
// runs those logs' shards on its cores (shard i on core i modulo the cores): every stream, a fork whose
// source is in the other log, and producer state come back, and writes go on, in both directions.
TEST_F(durable_node_test, a_data_dir_restarts_with_any_number_of_cores) {
  ASSERT_TRUE(start().has_value());
  const std::string a = path_on(0, "a"), b = path_on(1, "b"), fork = path_on(1, "fork");
  ASSERT_EQ(http(port_, "PUT", a, text, "alpha").status, 201);
  ASSERT_EQ(http(port_, "POST", a, test_support::producer_headers("text/plain", 0), "-1").status, 200);
  ASSERT_EQ(http(port_, "PUT", b, text, "beta").status, 201);
  ASSERT_EQ(http(port_, "PUT", fork, {{"Stream-Forked-From", a}}).status, 201);
  ASSERT_EQ(http(port_, "POST", fork, text, "+f").status, 204);
  stop();

  std::string want_a = "alpha-1", want_b = "beta", want_fork = "alpha-1+f";
  int seq = 1;
  for (unsigned threads : {1u, 3u, 2u}) {
    cfg_.threads = threads;
    ASSERT_TRUE(start().has_value()) << threads << " threads";
    EXPECT_EQ(n_->shard_count(), 2u) << "the directory's two logs, on " << threads << " cores";
    EXPECT_EQ(http(port_, "GET", a).body, want_a) << threads;
    EXPECT_EQ(http(port_, "GET", b).body, want_b) << threads;
    EXPECT_EQ(http(port_, "GET", fork).body, want_fork) << threads;
    // The producer's state came back: its last seq again is a duplicate, the next one appends.
    auto dup = http(port_, "POST", a, test_support::producer_headers("text/plain", seq - 1), "dup");
    EXPECT_EQ(dup.status, 204) << threads;
    const std::string more = "-" + std::to_string(seq + 1);
    EXPECT_EQ(http(port_, "POST", a, test_support::producer_headers("text/plain", seq), more).status, 200)
        << threads;
    ++seq;
    want_a += more;
    ASSERT_EQ(http(port_, "POST", b, text, std::to_string(threads)).status, 204);
    want_b += std::to_string(threads);
    const std::string c = path_on(0, "c" + std::to_string(threads));  // a new stream, in log 0
    ASSERT_EQ(http(port_, "PUT", c, text, "new").status, 201);
    stop();
  }
  ASSERT_TRUE(start().has_value());
  EXPECT_EQ(http(port_, "GET", a).body, want_a);
  EXPECT_EQ(http(port_, "GET", b).body, want_b);
  EXPECT_EQ(http(port_, "GET", fork).body, want_fork);
  for (unsigned threads : {1u, 3u, 2u})
    EXPECT_EQ(http(port_, "GET", path_on(0, "c" + std::to_string(threads))).body, "new");
}

}  // namespace
}  // namespace weir::server
