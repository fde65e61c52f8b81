// A single node with a cold tier, as a user runs it: `weir serve --cold s3://... --s3-endpoint` against
// s3rver on loopback (real processes, real SigV4). Appended bytes reach the bucket in objects whose
// ranges read back identical; a node killed with SIGKILL comes back with every byte and uploads the rest
// under a new term; a deleted stream's objects leave the bucket after the sweep's grace period while
// another stream's stay; a fork on another shard than its source reads the source's bytes from the
// bucket; a node whose credentials the bucket refuses does not start, and says why.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include "crash/blocking_client.h"
#include "crash/server_process.h"
#include "integration/s3/s3rver_process.h"
#include "replica/placement.h"
#include "tier/object_format.h"
#include "tier/object_key.h"
#include "tier/s3_object_store.h"

namespace weir::tier {
namespace {

using namespace std::chrono_literals;
using crash_test::blocking_client;
using crash_test::server_process;

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("weir-cold-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

class cold_node_test : public test::s3rver_suite {
 protected:
  void SetUp() override { dir_ = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string prefix() const {
    return std::string("cold-node/") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  std::vector<std::string> cold_args() const {
    return {"--threads",
            "1",
            "--cold",
            std::string("s3://") + test::s3rver_process::bucket + "/" + prefix(),
            "--s3-endpoint",
            server_->endpoint(),
            "--cold-max-age-ms",
            "100"};
  }
  // The test's view of the bucket: the same prefix, its own client.
  std::unique_ptr<s3_object_store> bucket() const {
    s3_settings s;
    s.location = *parse_cold_location(std::string("s3://") + test::s3rver_process::bucket + "/" + prefix());
    s.endpoint = *parse_s3_endpoint(server_->endpoint());
    s.credentials = s3_credentials{test::s3rver_process::access_key, test::s3rver_process::secret_key, ""};
    return std::make_unique<s3_object_store>(std::move(s));
  }
  // The bytes of `stream` in the bucket's objects, in key order (sequence order within a term, terms in
  // order), and the keys.
  std::string cold_bytes(const std::string& stream, std::vector<std::string>* keys = nullptr) const {
    auto store = bucket();
    auto page = store->list("e0001/", "");
    if (!page) return "list failed: " + page.err().describe();
    std::map<std::string, std::uint64_t> objects;
    for (const auto& o : page->objects) {
      if (parse_object_key(o.key)) objects[o.key] = o.size;  // data objects only (no restore snapshots)
    }
    std::string out;
    for (const auto& [key, size] : objects) {
      if (keys) keys->push_back(key);
      auto reader = object_reader::open(*store, key, size);
      if (!reader) return "open failed: " + reader.err().describe();
      for (const object_range& r : reader->footer().ranges) {
        if (r.stream != stream) continue;
        if (r.first.value() != out.size()) return "a gap or overlap at " + std::to_string(r.first.value());
        auto got = reader->read(r);
        if (!got) return "read failed: " + got.err().describe();
        out.append(reinterpret_cast<const char*>(got->data()), got->size());
      }
    }
    return out;
  }
  // Waits (up to 30 s) until the bucket holds `want` of `stream`: the node uploads in the background.
  std::string wait_for_cold(const std::string& stream, const std::string& want,
                            std::vector<std::string>* keys = nullptr) const {
    std::string got;
    for (auto end = std::chrono::steady_clock::now() + 30s; std::chrono::steady_clock::now() < end;) {
      std::vector<std::string> k;
      got = cold_bytes(stream, &k);
      if (got == want) {
        if (keys) *keys = k;
        return got;
      }
      std::this_thread::sleep_for(50ms);  // polling another process's background upload
    }
    return got;
  }

  std::filesystem::path dir_;
};

// s3rver's built-in account, as a user would pass it.
void use_credentials(const char* secret) {
  ::setenv("AWS_ACCESS_KEY_ID", test::s3rver_process::access_key, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
}

std::string append_all(std::uint16_t port, const std::string& stream, int from, int to) {
  blocking_client c(port);
  std::string all;
  for (int i = from; i < to; ++i) {
    std::string body = "record-" + std::to_string(i) + ";";
    auto r = c.request("POST", stream, {{"Content-Type", "text/plain"}}, body);
    EXPECT_EQ(r.status, 204) << r.error;
    all += body;
  }
  return all;
}

TEST_F(cold_node_test, appended_bytes_reach_the_bucket_and_survive_a_kill_with_a_new_term) {
  use_credentials(test::s3rver_process::secret_key);
  server_process node(WEIR_BINARY, dir_ / "data", cold_args(), dir_ / "node.log");
  node.start("first");
  std::string why;
  ASSERT_TRUE(node.wait_ready(20s, why)) << why << node.log_tail(2000);
  const std::string stream = "/v1/stream/cold";
  {
    blocking_client c(node.port());
    ASSERT_EQ(c.request("PUT", stream, {{"Content-Type", "text/plain"}}).status, 201);
  }
  std::string all = append_all(node.port(), stream, 0, 200);
  std::vector<std::string> keys;
  ASSERT_EQ(wait_for_cold(stream, all, &keys), all) << node.log_tail(3000);
  ASSERT_FALSE(keys.empty());
  EXPECT_NE(keys[0].find("e0001/g00000000/t0000000000000001-s"), std::string::npos) << keys[0];

  ASSERT_TRUE(node.kill(why)) << why;
  node.start("after kill -9");
  ASSERT_TRUE(node.wait_ready(20s, why)) << why << node.log_tail(2000);
  {
    blocking_client c(node.port());
    auto r = c.request("GET", stream + "?offset=-1");
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.body, all);
  }
  all += append_all(node.port(), stream, 200, 300);
  ASSERT_EQ(wait_for_cold(stream, all, &keys), all) << node.log_tail(3000);
  EXPECT_NE(keys.back().find("/t0000000000000002-s"), std::string::npos) << keys.back();
  ASSERT_TRUE(node.kill(why)) << why;
}

// Bytes on the node's disk under its data directory's log (segments, checkpoints).
std::uint64_t log_bytes(const std::filesystem::path& data) {
  std::uint64_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(data / "wal")) {
    if (e.is_regular_file()) n += e.file_size();
  }
  return n;
}

// Reads `stream` from offset 0 to its tail in the node's chunks (Stream-Next-Offset), as a client
// catching up does.
std::string catch_up(std::uint16_t port, const std::string& stream, int* requests) {
  blocking_client c(port);
  std::string out;
  std::string offset = "-1";
  for (*requests = 0; *requests < 100'000; ++*requests) {
    auto r = c.request("GET", stream + "?offset=" + offset);
    if (r.status != 200) return out + "<status " + std::to_string(r.status) + ": " + r.body + ">";
    out += r.body;
    const std::string next = r.header("Stream-Next-Offset");
    if (r.header("Stream-Up-To-Date") == "true") return out;
    if (next.empty() || next == offset) return out + "<no progress at " + offset + ">";
    offset = next;
  }
  return out + "<too many requests>";
}

// The JSON arrays of successive answers ("[a,b][c]") as one ("[a,b,c]").
std::string join_json_arrays(std::string s) {
  for (std::size_t at; (at = s.find("][")) != std::string::npos;) s.replace(at, 2, ",");
  return s;
}

TEST_F(cold_node_test, a_node_past_its_local_budget_keeps_its_disk_bounded_and_reads_every_byte_back) {
  use_credentials(test::s3rver_process::secret_key);
  constexpr std::uint64_t budget = 2u << 20;
  constexpr std::uint64_t segment = 256u << 10;
  auto args = cold_args();
  for (std::string a : {"--local-bytes", "2097152", "--segment-bytes", "262144", "--cold-object-bytes",
                        "65536", "--hot-bytes", "65536", "--fsync", "interval:10"})
    args.push_back(a);
  server_process node(WEIR_BINARY, dir_ / "data", args, dir_ / "node.log");
  node.start("tiered");
  std::string why;
  ASSERT_TRUE(node.wait_ready(20s, why)) << why << node.log_tail(2000);
  const std::string stream = "/v1/stream/big";
  {
    blocking_client c(node.port());
    ASSERT_EQ(c.request("PUT", stream, {{"Content-Type", "application/octet-stream"}}).status, 201);
  }
  // 8 MiB in 4 KiB appends; a 503 (the budget of bytes not yet uploaded is full) is retried, as a
  // client honouring Retry-After would.
  std::string all;
  int refused = 0;
  {
    blocking_client c(node.port());
    for (int i = 0; i < 2048; ++i) {
      std::string body(4096, static_cast<char>('A' + i % 26));
      std::memcpy(body.data(), &i, sizeof i);
      for (;;) {
        auto r = c.request("POST", stream, {{"Content-Type", "application/octet-stream"}}, body);
        if (r.status == 204) break;
        ASSERT_EQ(r.status, 503) << r.error << r.body;
        ++refused;
        std::this_thread::sleep_for(20ms);  // the node said to come back later
      }
      all += body;
    }
  }
  ASSERT_EQ(wait_for_cold(stream, all), all) << node.log_tail(3000);
  // The node forgets what is in the bucket and a checkpoint deletes the segments: wait for the disk to
  // come under its budget (plus the active segment).
  std::uint64_t on_disk = 0;
  for (auto end = std::chrono::steady_clock::now() + 30s; std::chrono::steady_clock::now() < end;) {
    on_disk = log_bytes(dir_ / "data");
    if (on_disk <= budget + segment) break;
    std::this_thread::sleep_for(50ms);  // polling the node's background reclaim
  }
  EXPECT_LE(on_disk, budget + segment) << node.log_tail(3000);
  int requests = 0;
  EXPECT_EQ(catch_up(node.port(), stream, &requests), all);
  // The node's own account: most of the stream came back from the bucket.
  {
    blocking_client c(node.port());
    auto m = c.request("GET", "/metrics");
    ASSERT_EQ(m.status, 200);
    auto value = [&](const std::string& name) -> std::uint64_t {
      auto at = m.body.find("\n" + name + " ");
      return at == std::string::npos ? 0 : std::stoull(m.body.substr(at + name.size() + 2));
    };
    EXPECT_GT(value("weir_tier_bucket_reads_total"), 50u) << m.body;
    EXPECT_EQ(value("weir_tier_bucket_read_failures_total"), 0u);
    EXPECT_GE(value("weir_tier_dropped_bytes_total"), all.size() - budget - segment);
    EXPECT_GE(value("weir_tier_uploaded_bytes_total"), all.size());
    // The bucket client's and the block cache's own account.
    EXPECT_GT(value("weir_tier_put_duration_seconds_count"), 0u) << m.body;
    EXPECT_GT(value("weir_tier_get_duration_seconds_count"), 0u);
    EXPECT_GT(value("weir_tier_cache_misses_total"), 0u);
    EXPECT_GE(value("weir_tier_fetched_bytes_total"), all.size() - budget - segment);
    EXPECT_GE(value("weir_tier_store_requests_total"),
              value("weir_tier_put_duration_seconds_count") + value("weir_tier_get_duration_seconds_count"));
  }
  ::testing::Test::RecordProperty("refused_appends", refused);
  ::testing::Test::RecordProperty("catch_up_requests", requests);

  // After a kill -9 every byte still reads back, from the bucket and the disk.
  ASSERT_TRUE(node.kill(why)) << why;
  node.start("after kill -9");
  ASSERT_TRUE(node.wait_ready(20s, why)) << why << node.log_tail(2000);
  EXPECT_EQ(catch_up(node.port(), stream, &requests), all);
  ASSERT_TRUE(node.kill(why)) << why;
}

TEST_F(cold_node_test, a_deleted_streams_objects_leave_the_bucket_and_other_streams_stay) {
  use_credentials(test::s3rver_process::secret_key);
  auto args = cold_args();
  for (std::string a : {"--cold-gc-grace-ms", "1000", "--cold-snapshot-interval-ms", "200"})
    args.push_back(a);
  server_process node(WEIR_BINARY, dir_ / "data", args, dir_ / "node.log");
  node.start("sweeping");
  std::string why;
  ASSERT_TRUE(node.wait_ready(20s, why)) << why << node.log_tail(2000);
  const std::string gone = "/v1/stream/gone", kept = "/v1/stream/kept";
  blocking_client c(node.port());
  // The doomed stream's bytes reach the bucket before the other stream has any, so that no object holds
  // both.
  ASSERT_EQ(c.request("PUT", gone, {{"Content-Type", "text/plain"}}).status, 201);
  const std::string gone_all = append_all(node.port(), gone, 0, 100);
  std::vector<std::string> gone_keys;
  ASSERT_EQ(wait_for_cold(gone, gone_all, &gone_keys), gone_all) << node.log_tail(3000);
  ASSERT_FALSE(gone_keys.empty());
  ASSERT_EQ(c.request("PUT", kept, {{"Content-Type", "text/plain"}}).status, 201);
  std::string kept_all = append_all(node.port(), kept, 0, 100);
  ASSERT_EQ(wait_for_cold(kept, kept_all), kept_all) << node.log_tail(3000);

  ASSERT_EQ(c.request("DELETE", gone).status, 204);
  // The sweep lists the bucket every second and deletes what nothing names after a second's grace. A
  // restore snapshot cut before the delete names the objects until newer ones replace it: the other
  // stream's appends go on meanwhile, so that the log grows and new snapshots are cut.
  auto listed = [&]() -> long {
    auto page = bucket()->list("e0001/", "");
    if (!page) return -1;
    std::vector<std::string> keys;
    for (const auto& o : page->objects) keys.push_back(o.key);
    return std::count_if(gone_keys.begin(), gone_keys.end(), [&](const std::string& k) {
      return std::find(keys.begin(), keys.end(), k) != keys.end();
    });
  };
  auto left = listed();
  int next = 100;
  for (auto end = std::chrono::steady_clock::now() + 40s; left != 0 && std::chrono::steady_clock::now() < end;
       left = listed()) {
    kept_all += append_all(node.port(), kept, next, next + 1);
    ++next;
    std::this_thread::sleep_for(100ms);  // polling the node's background sweep
  }
  EXPECT_EQ(left, 0) << node.log_tail(3000);
  // Once the other stream's last bytes are in the bucket no upload is in flight, so a listing holds only
  // whole objects (s3rver lists an object while its PUT is still being written).
  EXPECT_EQ(wait_for_cold(kept, kept_all), kept_all) << node.log_tail(3000);
  EXPECT_EQ(cold_bytes(gone), "");
  auto r = c.request("GET", kept + "?offset=-1");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kept_all);
  auto m = c.request("GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  auto value = [&](const std::string& name) -> std::uint64_t {
    auto at = m.body.find("\n" + name + " ");
    return at == std::string::npos ? 0 : std::stoull(m.body.substr(at + name.size() + 2));
  };
  EXPECT_GE(value("weir_tier_objects_deleted_total"), gone_keys.size()) << m.body;
  EXPECT_EQ(value("weir_tier_delete_failures_total"), 0u);
  ASSERT_TRUE(node.kill(why)) << why;
}

// Waits (up to 60 s) for the node's process to end by itself; true when it has.
bool exits(server_process& node) {
  // A pidfd becomes readable when the process ends.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, node.pid(), 0));
  EXPECT_GE(pidfd, 0) << std::strerror(errno);
  if (pidfd < 0) return false;
  pollfd p{pidfd, POLLIN, 0};
  (void)::poll(&p, 1, 60'000);
  ::close(pidfd);
  std::string why;
  return !node.alive(why);
}

TEST_F(cold_node_test, a_node_whose_credentials_the_bucket_refuses_does_not_start) {
  use_credentials("not-the-secret");
  server_process node(WEIR_BINARY, dir_ / "data", cold_args(), dir_ / "node.log");
  node.start("wrong secret");
  ASSERT_TRUE(exits(node)) << "still running with a refused secret";
  const std::string log = node.log_tail(4000);
  EXPECT_NE(log.find("cannot be listed"), std::string::npos) << log;
  EXPECT_NE(log.find("SignatureDoesNotMatch"), std::string::npos) << log;
  EXPECT_EQ(log.find("not-the-secret"), std::string::npos) << "the secret is in the log";
}

// A loopback port nothing listens on now (the kernel's pick for a socket bound to port 0).
std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST_F(cold_node_test, a_budget_too_small_to_work_stops_the_start_and_names_the_smallest) {
  use_credentials(test::s3rver_process::secret_key);
  // A single node: two shards of three segments and two objects each.
  auto single = cold_args();
  single[1] = "2";
  for (std::string a :
       {"--local-bytes", "1048576", "--segment-bytes", "262144", "--cold-object-bytes", "65536"})
    single.push_back(a);
  server_process one(WEIR_BINARY, dir_ / "single", single, dir_ / "single.log");
  one.start("too small a budget");
  ASSERT_TRUE(exits(one)) << "started with local-bytes under its smallest";
  const std::string one_log = one.log_tail(4000);
  EXPECT_NE(one_log.find("local-bytes 1048576 is too small for 2 shards: at least 1835008"),
            std::string::npos)
      << one_log;
  // A cluster node's lane also keeps room for its 64 groups' raft logs (1.25 raft-snapshot-bytes each).
  auto member = cold_args();
  const std::string peer = "127.0.0.1:" + std::to_string(free_port());
  for (std::string a :
       {"--local-bytes", "67108864", "--raft-snapshot-bytes", "1048576", "--raft-segment-bytes", "1048576",
        "--segment-bytes", "1048576", "--cold-object-bytes", "65536", "--node-id", "1"})
    member.push_back(a);
  for (const std::string& a : {std::string("--peer-listen"), peer, std::string("--peers"), "1=" + peer})
    member.push_back(a);
  server_process node(WEIR_BINARY, dir_ / "member", member, dir_ / "member.log");
  node.start("too small a budget for the raft logs");
  ASSERT_TRUE(exits(node)) << "started with local-bytes under its smallest" << node.log_tail(2000);
  const std::string log = node.log_tail(4000);
  // 3 x 1 MiB + 64 x 1.25 MiB + 2 x 64 KiB = 83 MiB + 128 KiB.
  EXPECT_NE(log.find("local-bytes 67108864 is too small for 1 lanes: at least 87162880"), std::string::npos)
      << log;
}

// POSTs `body` to `stream`, again after each 503 (the node's budget of bytes not yet in the bucket is full
// until uploads land), as a client honouring Retry-After would; the last status.
int post_until_taken(blocking_client& c, const std::string& stream, const std::string& content_type,
                     const std::string& body) {
  for (auto end = std::chrono::steady_clock::now() + 60s;;) {
    auto r = c.request("POST", stream, {{"Content-Type", content_type}}, body);
    if (r.status != 503 || std::chrono::steady_clock::now() > end) return r.status;
    std::this_thread::sleep_for(20ms);  // the node said to come back later
  }
}

// The node's /metrics value `name` (0 when absent).
double metric(std::uint16_t port, const std::string& name) {
  blocking_client c(port);
  auto m = c.request("GET", "/metrics");
  auto at = m.body.find("\n" + name + " ");
  return at == std::string::npos ? 0 : std::stod(m.body.substr(at + name.size() + 2));
}

// Waits (up to 30 s) until the node's /metrics value `name` reaches `at_least` (the node does it in the
// background: uploads, reclaims, snapshots); returns the last value read.
double wait_for_metric(std::uint16_t port, const std::string& name, double at_least) {
  double v = metric(port, name);
  for (auto end = std::chrono::steady_clock::now() + 30s;
       v < at_least && std::chrono::steady_clock::now() < end; v = metric(port, name)) {
    std::this_thread::sleep_for(50ms);  // polling another process's background work
  }
  return v;
}

TEST_F(cold_node_test, a_node_whose_disk_is_lost_comes_back_from_the_bucket_with_every_byte) {
  use_credentials(test::s3rver_process::secret_key);
  auto args = cold_args();
  args[1] = "2";  // two shards: two groups, each with its own snapshots
  for (std::string a :
       {"--cold-snapshot-interval-ms", "200", "--local-bytes", "2097152", "--segment-bytes", "262144",
        "--cold-object-bytes", "65536", "--hot-bytes", "65536", "--fsync", "interval:10"})
    args.push_back(a);
  server_process node(WEIR_BINARY, dir_ / "data", args, dir_ / "node.log");
  node.start("before the loss");
  std::string why;
  ASSERT_TRUE(node.wait_ready(20s, why)) << why << node.log_tail(2000);
  // A byte stream larger than the node keeps (most of it only in objects), JSON messages, a small stream
  // whose bytes may not be in an object yet, and a deleted stream.
  std::map<std::string, std::string> want;
  {
    blocking_client c(node.port());
    for (const char* s : {"/v1/stream/big", "/v1/stream/small", "/v1/stream/gone"}) {
      ASSERT_EQ(c.request("PUT", s, {{"Content-Type", "application/octet-stream"}}).status, 201);
    }
    ASSERT_EQ(c.request("PUT", "/v1/stream/json", {{"Content-Type", "application/json"}}).status, 201);
    for (int i = 0; i < 1024; ++i) {
      std::string body(4096, static_cast<char>('a' + i % 26));
      std::memcpy(body.data(), &i, sizeof i);
      ASSERT_EQ(post_until_taken(c, "/v1/stream/big", "application/octet-stream", body), 204);
      want["/v1/stream/big"] += body;
      if (i == 511) {
        // A fork halfway: its source's bytes leave the disk all the same, and come back from the bucket.
        ASSERT_EQ(c.request("PUT", "/v1/stream/big-fork", {{"Stream-Forked-From", "/v1/stream/big"}}).status,
                  201);
        ASSERT_EQ(post_until_taken(c, "/v1/stream/big-fork", "application/octet-stream", "+fork"), 204);
        want["/v1/stream/big-fork"] = want["/v1/stream/big"] + "+fork";
      }
    }
    for (int i = 0; i < 40; ++i) {
      const std::string msg = "{\"n\":" + std::to_string(i) + "}";
      ASSERT_EQ(post_until_taken(c, "/v1/stream/json", "application/json", msg), 204);
    }
    ASSERT_EQ(post_until_taken(c, "/v1/stream/small", "application/octet-stream", "tail"), 204);
    want["/v1/stream/small"] = "tail";
    ASSERT_EQ(c.request("DELETE", "/v1/stream/gone").status, 204);
    auto j = c.request("GET", "/v1/stream/json?offset=-1");
    ASSERT_EQ(j.status, 200);
    want["/v1/stream/json"] = j.body;
  }
  // Every shard has uploaded a snapshot taken after the last write.
  const double after =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  ASSERT_GE(wait_for_metric(node.port(), "weir_tier_restore_point_timestamp_seconds", after), after)
      << node.log_tail(3000);

  // The disk is lost: a new node on an empty directory restores from the bucket alone.
  ASSERT_TRUE(node.kill(why)) << why;
  std::filesystem::remove_all(dir_ / "data");
  auto restore_args = args;
  restore_args.push_back("--restore");
  restore_args.push_back("true");
  server_process restored(WEIR_BINARY, dir_ / "restored", restore_args, dir_ / "restored.log");
  restored.start("restored");
  ASSERT_TRUE(restored.wait_ready(30s, why)) << why << restored.log_tail(3000);
  const std::string log = restored.log_tail(6000);
  EXPECT_NE(log.find("restored 2 groups"), std::string::npos) << log;
  EXPECT_NE(log.find("to the point in time"), std::string::npos) << log;
  EXPECT_NE(log.find("uploads under epoch 2"), std::string::npos) << log;
  int requests = 0;
  for (const auto& [stream, bytes] : want) {
    std::string got = catch_up(restored.port(), stream, &requests);
    // A JSON stream's catch-up may take several answers (its bytes in objects, then the records the
    // snapshot inlined), each an array: the same messages.
    if (stream == "/v1/stream/json") got = join_json_arrays(got);
    EXPECT_EQ(got, bytes) << stream;
  }
  {
    blocking_client c(restored.port());
    EXPECT_EQ(c.request("GET", "/v1/stream/gone?offset=-1").status, 404);
    // /healthz says how the tier stands.
    auto h = c.request("GET", "/healthz");
    EXPECT_EQ(h.status, 200);
    EXPECT_EQ(h.body.rfind("ok\ncold tier s3://", 0), 0u) << h.body;
    EXPECT_NE(h.body.find("bytes not in the bucket"), std::string::npos) << h.body;
    // It takes writes, and they survive its own restart.
    ASSERT_EQ(post_until_taken(c, "/v1/stream/small", "application/octet-stream", "+more"), 204);
  }
  ASSERT_TRUE(restored.kill(why)) << why;
  // A second start with --restore refuses the directory it restored: it holds data now.
  restored.start("restore again");
  EXPECT_FALSE(restored.wait_ready(20s, why));
  EXPECT_NE(restored.log_tail(2000).find("a restore starts from an empty data directory"), std::string::npos)
      << restored.log_tail(2000);
  restored.set_args(args);
  restored.start("after the restore");
  ASSERT_TRUE(restored.wait_ready(20s, why)) << why << restored.log_tail(2000);
  EXPECT_EQ(catch_up(restored.port(), "/v1/stream/small", &requests), "tail+more");
  EXPECT_EQ(catch_up(restored.port(), "/v1/stream/big", &requests), want["/v1/stream/big"]);
  ASSERT_TRUE(restored.kill(why)) << why;
}

TEST_F(cold_node_test, a_stalled_bucket_stops_appends_only_at_the_budget_and_loses_nothing) {
  use_credentials(test::s3rver_process::secret_key);
  auto args = cold_args();
  for (std::string a : {"--local-bytes", "2097152", "--segment-bytes", "262144", "--cold-object-bytes",
                        "65536", "--hot-bytes", "65536", "--fsync", "interval:10"})
    args.push_back(a);
  server_process node(WEIR_BINARY, dir_ / "data", args, dir_ / "node.log");
  node.start("stalled bucket");
  std::string why;
  ASSERT_TRUE(node.wait_ready(20s, why)) << why << node.log_tail(2000);
  const std::string stream = "/v1/stream/stalled";
  blocking_client c(node.port());
  ASSERT_EQ(c.request("PUT", stream, {{"Content-Type", "application/octet-stream"}}).status, 201);
  std::string all;
  int i = 0;
  auto append = [&]() {
    std::string body(8192, static_cast<char>('a' + i % 26));
    std::memcpy(body.data(), &i, sizeof i);
    auto r = c.request("POST", stream, {{"Content-Type", "application/octet-stream"}}, body);
    if (r.status == 204) {
      all += body;
      ++i;
    }
    return r;
  };
  // The bucket stops answering (the process is stopped: connections open, nothing comes back).
  ASSERT_EQ(::kill(server_->pid(), SIGSTOP), 0);
  std::size_t before_refused = 0;
  for (int n = 0; n < 2048; ++n) {
    auto r = append();
    if (r.status == 503) {
      EXPECT_NE(r.body.find("not yet in the bucket"), std::string::npos) << r.body;
      EXPECT_FALSE(r.header("Retry-After").empty());
      before_refused = all.size();
      break;
    }
    ASSERT_EQ(r.status, 204) << r.error << r.body;
  }
  // Refused only at the budget: the shard's share (all of local-bytes here) less three segments.
  EXPECT_GE(before_refused, 2097152u - 3 * 262144u - 65536u) << node.log_tail(2000);
  {
    auto h = c.request("GET", "/healthz");
    EXPECT_EQ(h.status, 200);
    EXPECT_EQ(h.body.rfind("degraded\n", 0), 0u) << h.body;
    EXPECT_NE(h.body.find("appends refused"), std::string::npos) << h.body;
    // Reads go on meanwhile.
    int requests = 0;
    EXPECT_EQ(catch_up(node.port(), stream, &requests), all);
  }
  // The bucket comes back: appends go on once uploads land, and every byte reaches it.
  ASSERT_EQ(::kill(server_->pid(), SIGCONT), 0);
  for (auto end = std::chrono::steady_clock::now() + 60s;
       i < 512 && std::chrono::steady_clock::now() < end;) {
    auto r = append();
    if (r.status == 503) {
      std::this_thread::sleep_for(50ms);  // the node said to come back later
      continue;
    }
    ASSERT_EQ(r.status, 204) << r.error << r.body;
  }
  ASSERT_EQ(i, 512);
  EXPECT_EQ(wait_for_cold(stream, all), all) << node.log_tail(3000);
  int requests = 0;
  EXPECT_EQ(catch_up(node.port(), stream, &requests), all);
  ASSERT_TRUE(node.kill(why)) << why;
}

// A stream path under /v1/stream/ that a node of `shards` shards places on shard `shard` (as the node
// places streams: replica/placement.h).
std::string path_on(unsigned shard, unsigned shards, const std::string& stem) {
  for (int i = 0;; ++i) {
    std::string p = "/v1/stream/" + stem + std::to_string(i);
    if (replica::owner_index(p, shards) == shard) return p;
  }
}

TEST_F(cold_node_test, a_fork_on_another_shard_reads_its_sources_bytes_from_the_bucket) {
  use_credentials(test::s3rver_process::secret_key);
  auto args = cold_args();
  args[1] = "2";  // two shards: the source's index is shard 0's, the fork's reads are shard 1's
  for (std::string a : {"--local-bytes", "2097152", "--segment-bytes", "262144", "--cold-object-bytes",
                        "65536", "--hot-bytes", "65536", "--fsync", "interval:10"})
    args.push_back(a);
  server_process node(WEIR_BINARY, dir_ / "data", args, dir_ / "node.log");
  node.start("forks across shards");
  std::string why;
  ASSERT_TRUE(node.wait_ready(20s, why)) << why << node.log_tail(2000);
  const std::string src = path_on(0, 2, "source"), json = path_on(0, 2, "json");
  const std::string fork = path_on(1, 2, "fork"), json_fork = path_on(1, 2, "json-fork");
  blocking_client c(node.port());
  ASSERT_EQ(c.request("PUT", src, {{"Content-Type", "application/octet-stream"}}).status, 201);
  ASSERT_EQ(c.request("PUT", json, {{"Content-Type", "application/json"}}).status, 201);
  // 4 MiB through shard 0's share of the budget (1 MiB less three segments): most of it is reclaimed.
  std::string all;
  for (int i = 0; i < 1024; ++i) {
    std::string body(4096, static_cast<char>('a' + i % 26));
    std::memcpy(body.data(), &i, sizeof i);
    ASSERT_EQ(post_until_taken(c, src, "application/octet-stream", body), 204);
    all += body;
    if (i % 4 == 0) {
      const std::string msg = "{\"n\":" + std::to_string(i) + ",\"s\":\"" + std::string(600, 'q') + "\"}";
      ASSERT_EQ(post_until_taken(c, json, "application/json", msg), 204);
    }
  }
  // A JSON stream read in the node's chunks: every answer an array of whole messages; their messages.
  auto read_json = [&](const std::string& stream) {
    std::string got;
    std::string offset = "-1";
    for (int n = 0; n < 10'000; ++n) {
      auto r = c.request("GET", stream + "?offset=" + offset);
      if (r.status != 200) return got + "<status " + std::to_string(r.status) + ": " + r.body + ">";
      if (r.body.size() < 2 || r.body.front() != '[' || r.body.back() != ']') return got + "<not an array>";
      if (r.body.size() > 2) got += (got.empty() ? "" : ",") + r.body.substr(1, r.body.size() - 2);
      if (r.header("Stream-Up-To-Date") == "true") return got;
      offset = r.header("Stream-Next-Offset");
    }
    return got + "<too many requests>";
  };
  const std::string json_all = read_json(json);
  ASSERT_EQ(std::count(json_all.begin(), json_all.end(), '{'), 256) << json_all.substr(0, 200);
  // The shard forgets what is in the bucket once it is over its share: wait until most of the source is
  // only there (the reads below then start in objects).
  ASSERT_GE(wait_for_metric(node.port(), "weir_tier_dropped_bytes_total", 3u << 20), 3u << 20)
      << node.log_tail(3000);

  // Forks on shard 1, made after their sources' early bytes left shard 0's disk.
  ASSERT_EQ(c.request("PUT", fork, {{"Stream-Forked-From", src}}).status, 201);
  ASSERT_EQ(c.request("PUT", json_fork, {{"Stream-Forked-From", json}}).status, 201);
  ASSERT_EQ(post_until_taken(c, fork, "application/octet-stream", "+fork"), 204);
  const double reads_before = metric(node.port(), "weir_tier_bucket_reads_total");
  int requests = 0;
  EXPECT_EQ(catch_up(node.port(), fork, &requests), all + "+fork");
  // JSON: every answer is an array of whole messages, and together they are the source's.
  EXPECT_EQ(read_json(json_fork), json_all);
  EXPECT_GT(metric(node.port(), "weir_tier_bucket_reads_total"), reads_before);
  EXPECT_EQ(metric(node.port(), "weir_tier_bucket_read_failures_total"), 0);

  // Forks at offsets inside bytes only the bucket holds, where a record's start is known only from the
  // objects' record tables (docs/cold-tier.md, "Forks").
  // PUT `fork` from `source` at stream offset `at`, cut after `sub` bytes or messages (0: not cut).
  auto fork_at = [&](const std::string& fork, const std::string& source, std::uint64_t at,
                     std::uint64_t sub) {
    const std::string d = std::to_string(at);
    crash_test::header_list headers = {
        {"Stream-Forked-From", source},
        {"Stream-Fork-Offset", "0000000000000000_" + std::string(16 - d.size(), '0') + d}};
    if (sub > 0) headers.emplace_back("Stream-Fork-Sub-Offset", std::to_string(sub));
    return c.request("PUT", fork, headers);
  };
  // The 11th append of the source (4096 bytes from 40960), cut after 100 bytes, on either shard.
  for (const std::string& cut : {path_on(1, 2, "cut"), path_on(0, 2, "cut")}) {
    auto made = fork_at(cut, src, 40960, 100);
    ASSERT_EQ(made.status, 201) << made.body << node.log_tail(2000);
    EXPECT_EQ(catch_up(node.port(), cut, &requests), all.substr(0, 40960 + 100));
  }
  // Not a record's start, or a cut past the record's end: refused, as while the bytes are on disk.
  EXPECT_EQ(fork_at(path_on(1, 2, "mid"), src, 40961, 1).status, 400);
  EXPECT_EQ(fork_at(path_on(1, 2, "long"), src, 40960, 4097).status, 400);
  // A JSON stream at the start of its 11th message (each append one message, stored as "m,"), and one
  // byte later.
  std::uint64_t eleventh = 0;
  std::string first_ten;
  for (int i = 0; i < 40; i += 4) {
    const std::string msg = "{\"n\":" + std::to_string(i) + ",\"s\":\"" + std::string(600, 'q') + "\"}";
    eleventh += msg.size() + 1;
    first_ten += (first_ten.empty() ? "" : ",") + msg;
  }
  const std::string json_at = path_on(1, 2, "json-at");
  auto json_made = fork_at(json_at, json, eleventh, 0);
  ASSERT_EQ(json_made.status, 201) << json_made.body;
  EXPECT_EQ(read_json(json_at), first_ten);
  EXPECT_EQ(fork_at(path_on(1, 2, "json-mid"), json, eleventh + 1, 0).status, 400);
  EXPECT_EQ(metric(node.port(), "weir_tier_bucket_read_failures_total"), 0);
  ASSERT_TRUE(node.kill(why)) << why;
}

TEST_F(cold_node_test, a_restore_from_a_bucket_without_snapshots_does_not_start) {
  use_credentials(test::s3rver_process::secret_key);
  auto args = cold_args();
  args.push_back("--restore");
  args.push_back("true");
  server_process node(WEIR_BINARY, dir_ / "data", args, dir_ / "node.log");
  node.start("nothing to restore");
  std::string why;
  EXPECT_FALSE(node.wait_ready(20s, why));
  EXPECT_NE(node.log_tail(2000).find("holds nothing of weir's"), std::string::npos) << node.log_tail(2000);
}

}  // namespace
}  // namespace weir::tier
