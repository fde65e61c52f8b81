// A log write that fails (disk full: 507, I/O error: 503) fails its append and every write after it
// until the core has rebuilt its state from the log; then writes resume by themselves, and the state
// is exactly what the log holds: nothing that was answered with an error shows up, producer sequence
// numbers are where the log left them, and a restart agrees.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "storage/mem_env.h"
#include "unit/storage/test_util.h"

#include "unit/server/durable_node_fixture.h"
#include "unit/server/http_test_client.h"

namespace weir::server {
namespace {

using test_support::http;
using test_support::path_on;
using test_support::reply;

const std::map<std::string, std::string> text = {{"Content-Type", "text/plain"}};

std::map<std::string, std::string> producer(int seq) {
  return test_support::producer_headers("text/plain", seq);
}

class write_failure_test : public test_support::durable_node_fixture {
 protected:
  void SetUp() override {
    durable_node_fixture::SetUp();
    env_ = &mem_;
  }
  // Retries `method path` until it is no longer refused with `refused` (bounded: 30 s).
  reply until_accepted(const std::string& path, const std::map<std::string, std::string>& headers,
                       const std::string& body, int refused) {
    reply r;
    for (int i = 0; i < 600; ++i) {
      r = http(port_, "POST", path, headers, body);
      if (r.status != refused) return r;
      EXPECT_EQ(r.headers["retry-after"].empty(), false) << "a refusal says when to retry";
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return r;
  }

  storage::mem_env mem_;
};

TEST_F(write_failure_test, a_full_disk_fails_writes_with_507_until_space_returns_and_loses_nothing) {
  cfg_.prepare_segments = false;  // a prepared segment's zeros would hold the records: space taken ahead
  ASSERT_TRUE(start().has_value());
  std::string a = path_on(0, "a"), b = path_on(1, "b");
  ASSERT_EQ(http(port_, "PUT", a, text, "one").status, 201);
  ASSERT_EQ(http(port_, "PUT", b, text, "bee").status, 201);
  ASSERT_EQ(http(port_, "POST", a, producer(0), "+p0").status, 200);

  mem_.set_capacity(mem_.used_bytes() + 10);  // room for a torn piece of a record only
  reply full = http(port_, "POST", a, producer(1), "+p1");
  EXPECT_EQ(full.status, 507);
  EXPECT_NE(full.body.find("insufficient storage"), std::string::npos) << full.body;
  EXPECT_EQ(http(port_, "POST", a, text, "+lost").status, 507);
  EXPECT_EQ(http(port_, "GET", a).body, "one+p0") << "nothing that failed is visible";

  mem_.set_capacity(std::nullopt);
  // The producer's seq 1 failed, so its retry is a new append (200), not a duplicate of a lost one.
  reply retried = until_accepted(a, producer(1), "+p1", 507);
  EXPECT_EQ(retried.status, 200) << retried.body;
  EXPECT_EQ(http(port_, "POST", a, producer(2), "+p2").status, 200);
  EXPECT_EQ(http(port_, "GET", a).body, "one+p0+p1+p2");
  EXPECT_EQ(http(port_, "GET", b).body, "bee");
  stop();
  ASSERT_TRUE(start().has_value());
  EXPECT_EQ(http(port_, "GET", a).body, "one+p0+p1+p2");
  EXPECT_EQ(http(port_, "POST", a, producer(2), "+p2").status, 204);
}

TEST_F(write_failure_test, an_io_error_fails_writes_with_503_then_writes_resume) {
  cfg_.checkpoint_bytes = 64 << 10;  // the rebuild starts from a checkpoint
  cfg_.read_chunk_bytes = 1 << 20;   // one GET reads the whole stream
  ASSERT_TRUE(start().has_value());
  std::string a = path_on(1, "a"), fork = path_on(0, "fork");
  ASSERT_EQ(http(port_, "PUT", a, text, "base").status, 201);
  std::string big(70 << 10, 'z');
  ASSERT_EQ(http(port_, "POST", a, text, big).status, 204);
  ASSERT_EQ(http(port_, "POST", a, text, "+1").status, 204);  // after the checkpoint
  ASSERT_EQ(http(port_, "PUT", fork, {{"Stream-Forked-From", a}}).status, 201);

  mem_.set_write_error(true);
  EXPECT_EQ(http(port_, "POST", a, text, "+lost").status, 503);
  EXPECT_EQ(http(port_, "PUT", path_on(1, "new"), text).status, 503);
  mem_.set_write_error(false);
  EXPECT_EQ(until_accepted(a, text, "+2", 503).status, 204);
  EXPECT_EQ(http(port_, "GET", path_on(1, "new")).status, 404);
  std::string body = http(port_, "GET", a).body;
  EXPECT_EQ(body.size(), 4 + big.size() + 4);
  EXPECT_TRUE(body == "base" + big + "+1+2") << body.substr(0, 8) << "..." << body.substr(body.size() - 8);
  EXPECT_EQ(http(port_, "GET", fork + "?offset=-1").status, 200);
  EXPECT_EQ(http(port_, "POST", fork, text, "+f").status, 204);
  stop();
  ASSERT_TRUE(start().has_value());
  EXPECT_TRUE(http(port_, "GET", a).body == "base" + big + "+1+2");
}

// A disk that stops answering: once the writes waiting for it hold max_in_flight_bytes, further writes
// get 503 with Retry-After at once instead of piling up in memory; they are accepted again once the
// disk catches up.
TEST_F(write_failure_test, writes_beyond_the_in_flight_limit_get_503_while_the_disk_stalls) {
  storage::testing::gated_env gated(mem_);
  env_ = &gated;
  cfg_.body_limit = 64 << 10;
  cfg_.max_in_flight_bytes = 64 << 10;
  cfg_.prepare_segments = false;  // the gate would also hold the spare segment's syncs, on their thread
  ASSERT_TRUE(start().has_value());
  std::string a = path_on(0, "a");
  ASSERT_EQ(http(port_, "PUT", a, text).status, 201);
  gated.close_gate();  // every fdatasync now blocks
  std::string chunk(40 << 10, 'x');
  std::vector<std::thread> waiting;
  std::vector<int> statuses(2);
  for (int i = 0; i < 2; ++i) {
    waiting.emplace_back([&, i] { statuses[i] = http(port_, "POST", a, text, chunk).status; });
    if (i == 0) {
      ASSERT_TRUE(gated.wait_blocked(1));  // the first is in flight, its sync stuck
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the second joins it
    }
  }
  // The second is queued behind the first (80 KiB in flight): the third is refused.
  reply refused;
  for (int i = 0; i < 5; ++i) {  // bounded: an accepted "y" would wait for the disk (10 s timeout)
    refused = http(port_, "POST", a, text, "y");
    if (refused.status == 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.headers["retry-after"], "1");
  EXPECT_NE(refused.body.find("too many writes waiting"), std::string::npos) << refused.body;
  gated.open_gate();
  for (auto& t : waiting) t.join();
  EXPECT_EQ(statuses[0], 204);
  EXPECT_EQ(statuses[1], 204);
  EXPECT_EQ(http(port_, "POST", a, text, "z").status, 204);
  EXPECT_EQ(http(port_, "HEAD", a).headers["stream-next-offset"], "0000000000000000_0000000000081921");
}

}  // namespace
}  // namespace weir::server
