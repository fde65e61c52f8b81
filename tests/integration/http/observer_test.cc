// server_options::observer: every finished exchange is reported once, on its connection's core, with
// the handler's tag, the status, the bytes that crossed the wire, its times, and the method and path
// (without the query) only when asked for. Real loopback sockets.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "http_test_support.h"

namespace weir::http {
namespace {

using namespace std::chrono_literals;
using testing::client;
using testing::get;
using testing::response;
using testing::running_server;

struct seen {
  exchange_record r;
  std::string method, path;  // copies: the record's views die with the call
  bool on_loop = false;
};

class recording_observer final : public exchange_observer {
 public:
  void finished(unsigned core, const exchange_record& r) override {
    std::lock_guard lock(mu_);
    io::event_loop* cur = io::event_loop::current();
    records_.push_back(
        {r, std::string(r.method), std::string(r.path), cur != nullptr && cur->index() == core});
    cv_.notify_all();
  }
  // The first `n` records, once there are that many (bounded wait: a record that never comes fails).
  std::vector<seen> wait_for(std::size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, 5s, [&] { return records_.size() >= n; });
    return records_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<seen> records_;
};

TEST(observer, a_response_is_reported_with_tag_status_bytes_and_request_line) {
  recording_observer obs;
  obs.wants_request_line = true;
  server_options o = testing::test_options();
  o.observer = &obs;
  running_server s(o, [](const request& req, exchange ex) {
    ex.set_tag(req.path() == "/a" ? 7 : 9);
    static constexpr header h[] = {{"Content-Type", "text/plain"}};
    ex.respond(req.path() == "/a" ? 200 : 404, h, "hello");
  });
  client c(s.port());
  const std::string first = get("/a?token=secret");
  const std::string second = get("/b");
  c.send(first + second);  // pipelined: one read
  response r1, r2;
  ASSERT_TRUE(c.read_response(r1));
  ASSERT_TRUE(c.read_response(r2));
  auto got = obs.wait_for(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].r.tag, 7);
  EXPECT_EQ(got[0].r.status, 200);
  EXPECT_EQ(got[0].r.bytes_in, first.size());
  EXPECT_EQ(got[0].r.bytes_out, r1.head.size() + 2 + r1.body.size());  // head, blank line, body
  EXPECT_EQ(got[0].method, "GET");
  EXPECT_EQ(got[0].path, "/a");  // never the query: it may carry a token
  EXPECT_EQ(got[0].r.client, 0x7f000001u);
  EXPECT_EQ(got[0].r.head_ns, got[0].r.total_ns);
  EXPECT_TRUE(got[0].on_loop);
  EXPECT_EQ(got[1].r.tag, 9);
  EXPECT_EQ(got[1].r.status, 404);
  EXPECT_EQ(got[1].path, "/b");
  EXPECT_EQ(got[1].r.bytes_in, second.size());
}

TEST(observer, without_wants_request_line_nothing_is_copied) {
  recording_observer obs;
  server_options o = testing::test_options();
  o.observer = &obs;
  running_server s(o, [](const request&, exchange ex) { ex.respond(204, {}, {}); });
  client c(s.port());
  c.send(get("/x"));
  response r;
  ASSERT_TRUE(c.read_response(r));
  auto got = obs.wait_for(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].r.status, 204);
  EXPECT_EQ(got[0].r.tag, 0);  // never set
  EXPECT_TRUE(got[0].method.empty());
  EXPECT_TRUE(got[0].path.empty());
}

TEST(observer, a_streamed_response_is_reported_once_at_its_end_with_every_byte) {
  recording_observer obs;
  server_options o = testing::test_options();
  o.observer = &obs;
  running_server s(o, [](const request&, exchange ex) {
    ex.set_tag(3);
    static constexpr header h[] = {{"Content-Type", "text/event-stream"}};
    ex.begin_stream(200, h);
    ex.write("data: one\n\n");
    ex.flush();
    ex.loop()->add_timer(5ms, [ex]() mutable {
      ex.write("data: two\n\n");
      ex.end();
    });
  });
  client c(s.port());
  c.send(get("/events"));
  ASSERT_TRUE(c.wait_for("0\r\n\r\n"));
  const std::size_t received = c.buffer().size();
  auto got = obs.wait_for(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].r.tag, 3);
  EXPECT_EQ(got[0].r.status, 200);
  EXPECT_EQ(got[0].r.bytes_out, received);
  EXPECT_LE(got[0].r.head_ns, got[0].r.total_ns);
}

TEST(observer, a_client_that_leaves_before_the_answer_is_reported_with_status_0) {
  recording_observer obs;
  server_options o = testing::test_options();
  o.observer = &obs;
  running_server s(o, [](const request&, exchange ex) { ex.set_tag(5); });  // never answers
  {
    client c(s.port());
    c.send(get("/wait"));
    ASSERT_TRUE(testing::eventually([&] { return s.server().stats().requests == 1; }));
  }  // closed
  auto got = obs.wait_for(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].r.tag, 5);
  EXPECT_EQ(got[0].r.status, 0);
  EXPECT_EQ(got[0].r.bytes_out, 0u);
}

TEST(observer, an_error_the_engine_answers_itself_has_tag_0) {
  recording_observer obs;
  server_options o = testing::test_options();
  o.observer = &obs;
  running_server s(o, [](const request&, exchange ex) { ex.respond(200, {}, "x"); });
  client c(s.port());
  c.send("BROKEN\r\n\r\n");
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.status, 400);
  auto got = obs.wait_for(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].r.tag, 0);
  EXPECT_EQ(got[0].r.status, 400);
  EXPECT_EQ(got[0].r.bytes_in, 0u);
  EXPECT_EQ(got[0].r.bytes_out, r.head.size() + 2 + r.body.size());
}

}  // namespace
}  // namespace weir::http
