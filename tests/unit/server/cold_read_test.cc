// Cold reads off the event loop (docs/storage.md, "Reads of old data"): a read whose plan holds records
// evicted from memory is read back on the cold_reader's threads while the core goes on serving. The
// file system here is the real one behind a gate that holds every segment read until the test releases
// it, so a test can act while a cold read is in flight: a loop blocked by the read would leave every
// other request unanswered (the client gives up after 10 s and the test fails on its status).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/stream_shard.h"
#include "storage/env.h"

#include "unit/server/durable_node_fixture.h"
#include "unit/server/http_test_client.h"

namespace weir::server {
namespace {

using test_support::http;
using test_support::reply;

// Holds every read of a segment file while armed.
class read_gate {
 public:
  void arm() {
    std::lock_guard lock(mu_);
    armed_ = true;
    blocked_ = 0;
  }
  void release() {
    std::lock_guard lock(mu_);
    armed_ = false;
    cv_.notify_all();
  }
  void fail(bool on) {
    std::lock_guard lock(mu_);
    failing_ = on;
  }
  // False: the read fails (EIO).
  bool pass() {
    std::unique_lock lock(mu_);
    if (failing_) return false;
    if (!armed_) return true;
    ++blocked_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !armed_; });
    return !failing_;
  }
  // Whether a read is held (gives up after 30 s so that a broken build fails instead of hanging).
  bool wait_blocked() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [this] { return blocked_ > 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;
  bool failing_ = false;
  int blocked_ = 0;
};

class gated_file final : public storage::random_access_file {
 public:
  gated_file(std::unique_ptr<storage::random_access_file> f, read_gate& g) : f_(std::move(f)), gate_(g) {}
  result<std::size_t> read(std::uint64_t offset, std::span<std::byte> out) const override {
    if (!gate_.pass()) return storage::errno_error(EIO, "read (test)");
    return f_->read(offset, out);
  }
  result<std::uint64_t> size() const override { return f_->size(); }

 private:
  std::unique_ptr<storage::random_access_file> f_;
  read_gate& gate_;
};

class gated_env final : public storage::env {
 public:
  explicit gated_env(read_gate& g) : gate_(g) {}
  result<std::unique_ptr<storage::writable_file>> open_writable(const std::string& path,
                                                                storage::open_mode mode) override {
    return base_.open_writable(path, mode);
  }
  result<std::unique_ptr<storage::random_access_file>> open_readable(const std::string& path) override {
    auto f = base_.open_readable(path);
    if (!f) return f.err();
    return std::unique_ptr<storage::random_access_file>(std::make_unique<gated_file>(std::move(*f), gate_));
  }
  result<std::vector<std::string>> list_dir(const std::string& dir) override { return base_.list_dir(dir); }
  status create_dirs(const std::string& dir) override { return base_.create_dirs(dir); }
  status remove_file(const std::string& path) override { return base_.remove_file(path); }
  status rename_file(const std::string& from, const std::string& to) override {
    return base_.rename_file(from, to);
  }
  status sync_dir(const std::string& dir) override { return base_.sync_dir(dir); }
  bool file_exists(const std::string& path) override { return base_.file_exists(path); }

 private:
  storage::env& base_ = storage::default_posix_env();
  read_gate& gate_;
};

std::string record_of(int i, std::size_t size) {
  std::string s(size, static_cast<char>('a' + i % 26));
  s.replace(0, std::to_string(i).size(), std::to_string(i));
  return s;
}

// The data events of an SSE body (de-chunked), concatenated, and whether it ended with streamClosed.
struct sse_text {
  std::string data;
  bool closed = false;
  int data_events = 0;
};

sse_text parse_sse(const std::string& raw) {
  sse_text out;
  auto head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return out;
  std::string body;
  std::size_t pos = head_end + 4;
  while (pos < raw.size()) {
    std::size_t le = raw.find("\r\n", pos);
    if (le == std::string::npos) break;
    std::size_t size = std::stoul(raw.substr(pos, le - pos), nullptr, 16);
    if (size == 0) break;
    body.append(raw, le + 2, size);
    pos = le + 2 + size + 2;
  }
  std::size_t at = 0;
  while (at < body.size()) {
    std::size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    std::string block = body.substr(at, end - at);
    at = end + 2;
    const bool data_event = block.find("event: data\n") != std::string::npos;
    std::size_t line_at = 0;
    bool first = true;
    while (line_at <= block.size()) {
      std::size_t le = block.find('\n', line_at);
      if (le == std::string::npos) le = block.size();
      std::string line = block.substr(line_at, le - line_at);
      line_at = le + 1;
      if (line.rfind("data:", 0) != 0) continue;
      std::string d = line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5);
      if (data_event) {
        if (!first) out.data += '\n';
        out.data += d;
        first = false;
      } else if (d.find("\"streamClosed\":true") != std::string::npos) {
        out.closed = true;
      }
    }
    if (data_event) ++out.data_events;
  }
  return out;
}

// Reads a whole response on a fresh connection, to EOF.
std::string read_raw(std::uint16_t port, const std::string& path) {
  int fd = test_support::connect_loopback(port, 20);
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  std::string raw;
  std::vector<char> buf(1 << 16);
  while (true) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    raw.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return raw;
}

const std::map<std::string, std::string> text = {{"Content-Type", "text/plain"}};

class cold_read_test : public test_support::durable_node_fixture {
 protected:
  void SetUp() override {
    durable_node_fixture::SetUp();
    cfg_.threads = 1;  // every stream on one loop: a blocked loop would block every request
    cfg_.hot_bytes = 64 << 10;
    cfg_.checkpoint_bytes = 0;
    env_ = &genv_;
  }
  void TearDown() override {
    gate_.release();
    durable_node_fixture::TearDown();
  }
  // Creates `path` with `records` records of 8 KiB; most are evicted from memory (64 KiB budget).
  std::string fill(const std::string& path, int records) {
    EXPECT_EQ(http(port_, "PUT", path, text).status, 201);
    std::string all;
    for (int i = 0; i < records; ++i) {
      std::string r = record_of(i, 8 * 1024);
      EXPECT_EQ(http(port_, "POST", path, text, r).status, 204);
      all += r;
    }
    return all;
  }
  std::string read_all(const std::string& path) {
    std::string all, offset = "-1";
    for (int i = 0; i < 10000; ++i) {
      reply r = http(port_, "GET", path + "?offset=" + offset);
      EXPECT_EQ(r.status, 200) << path << " at " << offset;
      if (r.status != 200) break;
      all += r.body;
      offset = r.headers["stream-next-offset"];
      if (r.headers.count("stream-up-to-date")) break;
    }
    return all;
  }
  template <class F>
  auto on_core(F fn) {
    std::promise<decltype(fn(n_->shard(0)))> p;
    auto f = p.get_future();
    n_->shard(0).loop().post([&] { p.set_value(fn(n_->shard(0))); });
    return f.get();
  }
  // Waits (at most ~20 s) until `pred` holds on the core.
  template <class P>
  bool eventually(P pred) {
    for (int i = 0; i < 4000; ++i) {
      if (on_core(pred)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  read_gate gate_;
  gated_env genv_{gate_};
};

TEST_F(cold_read_test, a_cold_catch_up_is_read_off_the_loop_while_the_core_serves_others) {
  ASSERT_TRUE(start().has_value());
  const std::string cold = "/v1/stream/cold", other = "/v1/stream/other";
  std::string want = fill(cold, 40);
  ASSERT_EQ(http(port_, "PUT", other, text).status, 201);
  ASSERT_GT(on_core([](stream_shard& s) { return s.part().hot().evicted(); }), 20u);

  gate_.arm();
  auto catch_up = std::async(std::launch::async, [&] { return http(port_, "GET", cold + "?offset=-1"); });
  ASSERT_TRUE(gate_.wait_blocked());
  // The read is held in a pread; the loop answers everything else meanwhile.
  EXPECT_EQ(http(port_, "POST", other, text, "while the disk is slow").status, 204);
  reply hot = http(port_, "GET", other + "?offset=-1");
  EXPECT_EQ(hot.status, 200);
  EXPECT_EQ(hot.body, "while the disk is slow");
  EXPECT_EQ(http(port_, "HEAD", cold).status, 200);
  EXPECT_EQ(http(port_, "POST", cold, text, "+more").status, 204);
  if (HasFailure()) gate_.release();  // a blocked loop: let it go before asking it anything
  EXPECT_EQ(on_core([](stream_shard& s) { return s.part().cold_reads_pending(); }), 1u);
  gate_.release();

  reply r = catch_up.get();
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == want.substr(0, r.body.size())) << "the first chunk differs";
  EXPECT_GT(r.body.size(), 0u);
  EXPECT_TRUE(read_all(cold) == want + "+more");
  EXPECT_GT(on_core([](stream_shard& s) { return s.part().cold_reads_done(); }), 1u);
  EXPECT_EQ(on_core([](stream_shard& s) { return s.part().cold_reads_pending(); }), 0u);
  reply m = http(port_, "GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.body.find("weir_cold_reads_total 0\n"), std::string::npos);
  EXPECT_NE(m.body.find("weir_cold_reads_total "), std::string::npos);
  EXPECT_NE(m.body.find("weir_cold_reads_pending 0\n"), std::string::npos);
  EXPECT_NE(m.body.find("weir_cold_read_duration_seconds_count "), std::string::npos);
}

TEST_F(cold_read_test, sse_over_cold_data_sends_every_event_once_in_order) {
  ASSERT_TRUE(start().has_value());
  const std::string p = "/v1/stream/sse";
  std::string want = fill(p, 40);

  gate_.arm();
  auto session = std::async(std::launch::async, [&] { return read_raw(port_, p + "?offset=-1&live=sse"); });
  ASSERT_TRUE(gate_.wait_blocked());
  // Appends while the session's first read is held: they wake it, and it must neither skip its cold
  // catch-up nor send the new records before it or twice.
  EXPECT_EQ(http(port_, "POST", p, text, "+live1").status, 204);
  EXPECT_EQ(
      http(port_, "POST", p, {{"Content-Type", "text/plain"}, {"Stream-Closed", "true"}}, "+live2").status,
      204);
  gate_.release();

  sse_text got = parse_sse(session.get());
  EXPECT_TRUE(got.closed);
  EXPECT_GT(got.data_events, 2);
  EXPECT_EQ(got.data.size(), want.size() + 12);
  EXPECT_TRUE(got.data == want + "+live1+live2") << "SSE delivered other bytes";
}

TEST_F(cold_read_test, a_reader_that_goes_away_during_its_cold_read_is_dropped) {
  ASSERT_TRUE(start().has_value());
  const std::string p = "/v1/stream/leaver";
  std::string want = fill(p, 40);

  gate_.arm();
  int fd = test_support::connect_loopback(port_, 20);
  std::string req = "GET " + p + "?offset=-1&live=sse HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  ASSERT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  ASSERT_TRUE(gate_.wait_blocked());
  EXPECT_EQ(http(port_, "HEAD", p).status, 200);
  if (HasFailure()) gate_.release();  // a blocked loop: let it go before asking it anything
  ASSERT_EQ(on_core([](stream_shard& s) { return s.live_readers(); }), 1u);
  ::close(fd);  // the client leaves: cancel_live while the read is in flight
  EXPECT_TRUE(eventually([](stream_shard& s) { return s.live_readers() == 0; }));
  gate_.release();
  EXPECT_TRUE(eventually([](stream_shard& s) { return s.part().cold_reads_pending() == 0; }));
  // The core is well and the data intact.
  EXPECT_TRUE(read_all(p) == want);
}

TEST_F(cold_read_test, a_stream_deleted_during_its_cold_read_is_not_served) {
  ASSERT_TRUE(start().has_value());
  const std::string p = "/v1/stream/doomed";
  (void)fill(p, 40);

  gate_.arm();
  auto catch_up = std::async(std::launch::async, [&] { return http(port_, "GET", p + "?offset=-1"); });
  auto session = std::async(std::launch::async, [&] { return read_raw(port_, p + "?offset=-1&live=sse"); });
  ASSERT_TRUE(gate_.wait_blocked());
  EXPECT_EQ(http(port_, "HEAD", p).status, 200);
  if (HasFailure()) gate_.release();  // a blocked loop: let it go before asking it anything
  ASSERT_TRUE(eventually([](stream_shard& s) { return s.part().cold_reads_pending() == 2; }));
  ASSERT_EQ(http(port_, "DELETE", p).status, 204);
  // Created again at the same path: the old incarnation's bytes must not come back as the new one's.
  ASSERT_EQ(http(port_, "PUT", p, text).status, 201);
  ASSERT_EQ(http(port_, "POST", p, text, "new life").status, 204);
  gate_.release();

  EXPECT_EQ(catch_up.get().status, 404);
  // The session was told its stream is gone: it ended without a data event of the old stream.
  sse_text ended = parse_sse(session.get());
  EXPECT_EQ(ended.data_events, 0);
  EXPECT_TRUE(eventually([](stream_shard& s) { return s.part().cold_reads_pending() == 0; }));
  reply fresh = http(port_, "GET", p + "?offset=-1");
  EXPECT_EQ(fresh.status, 200);
  EXPECT_EQ(fresh.body, "new life");
}

TEST_F(cold_read_test, a_fork_inside_a_cold_record_reads_its_prefix_off_the_loop) {
  ASSERT_TRUE(start().has_value());
  const std::string src = "/v1/stream/source", fork = "/v1/stream/fork";
  std::string want = fill(src, 40);

  gate_.arm();
  auto created = std::async(std::launch::async, [&] {
    return http(port_, "PUT", fork,
                {{"Stream-Forked-From", src},
                 {"Stream-Fork-Offset", "0000000000000000_0000000000000000"},
                 {"Stream-Fork-Sub-Offset", "100"}});
  });
  ASSERT_TRUE(gate_.wait_blocked());
  EXPECT_EQ(http(port_, "HEAD", src).status, 200);
  gate_.release();
  EXPECT_EQ(created.get().status, 201);
  EXPECT_TRUE(read_all(fork) == want.substr(0, 100));
}

TEST_F(cold_read_test, cold_reads_beyond_the_bound_get_503_with_retry_after) {
  ASSERT_TRUE(start().has_value());
  const std::string p = "/v1/stream/busy";
  std::string want = fill(p, 40);
  on_core([](stream_shard& s) {
    s.part().set_cold_limits(1, 1);
    return 0;
  });

  gate_.arm();
  auto first = std::async(std::launch::async, [&] { return http(port_, "GET", p + "?offset=-1"); });
  ASSERT_TRUE(gate_.wait_blocked());
  // The next one waits on the core (one may); the one after it is refused.
  const std::string second_offset = "0000000000000000_0000000000008192";
  auto second =
      std::async(std::launch::async, [&] { return http(port_, "GET", p + "?offset=" + second_offset); });
  EXPECT_TRUE(eventually([](stream_shard& s) { return s.part().cold_reads_pending() == 2; }));
  reply refused = http(port_, "GET", p + "?offset=-1");
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.headers["retry-after"], "1");
  // Hot reads are not bounded.
  EXPECT_EQ(http(port_, "GET", p + "?offset=now").status, 200);
  gate_.release();

  reply a = first.get(), b = second.get();
  ASSERT_EQ(a.status, 200);
  ASSERT_EQ(b.status, 200);
  EXPECT_TRUE(a.body == want.substr(0, a.body.size()));
  EXPECT_TRUE(b.body == want.substr(8192, b.body.size()));
  EXPECT_TRUE(eventually([](stream_shard& s) { return s.part().cold_reads_pending() == 0; }));
}

TEST_F(cold_read_test, a_failing_cold_read_answers_503_and_the_core_goes_on) {
  ASSERT_TRUE(start().has_value());
  const std::string p = "/v1/stream/failing";
  std::string want = fill(p, 40);

  gate_.arm();
  auto failed = std::async(std::launch::async, [&] { return http(port_, "GET", p + "?offset=-1"); });
  ASSERT_TRUE(gate_.wait_blocked());
  gate_.fail(true);  // the held read fails when released
  gate_.release();
  reply r = failed.get();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.headers["retry-after"], "1");
  gate_.fail(false);
  EXPECT_TRUE(eventually([](stream_shard& s) { return s.part().cold_reads_pending() == 0; }));
  EXPECT_TRUE(read_all(p) == want);
}

}  // namespace
}  // namespace weir::server
