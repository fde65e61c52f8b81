// Connection timeouts with small values: header read, body read, idle keep-alive, stalled write.
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "http_test_support.h"

namespace weir::http {
namespace {

using namespace std::chrono_literals;
using testing::client;
using testing::get;
using testing::response;
using testing::running_server;

server_options short_timeouts() {
  auto o = testing::test_options();
  o.header_timeout = 100ms;
  o.body_timeout = 100ms;
  o.idle_timeout = 150ms;
  o.write_timeout = 100ms;
  return o;
}

void ok(const request&, exchange ex) {
  ex.respond(200, {}, "ok");
}

TEST(timeouts, incomplete_head_gets_408_and_close) {
  running_server s(short_timeouts(), ok);
  client c(s.port());
  c.send("GET / HTTP/1.1\r\nHost: t\r\n");  // no final CRLF
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.status, 408);
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_TRUE(c.wait_closed());
}

TEST(timeouts, incomplete_body_gets_408_and_close) {
  running_server s(short_timeouts(), ok);
  client c(s.port());
  c.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.status, 408);
  EXPECT_TRUE(c.wait_closed());
}

TEST(timeouts, idle_keep_alive_connection_is_closed_silently) {
  running_server s(short_timeouts(), ok);
  client c(s.port());
  c.send(get("/"));
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(c.wait_closed());
  EXPECT_EQ(c.buffer(), "");
  EXPECT_TRUE(testing::eventually([&] { return s.server().stats().open_connections == 0; }));
}

TEST(timeouts, a_connection_that_never_sends_is_closed_by_the_idle_timeout) {
  running_server s(short_timeouts(), ok);
  client c(s.port());
  EXPECT_TRUE(c.wait_closed());
  EXPECT_EQ(c.buffer(), "");
}

TEST(timeouts, unanswered_exchange_has_no_read_timeout) {
  // A long-poll style handler answers after several idle/header timeouts have passed.
  running_server s(short_timeouts(), [](const request&, exchange ex) {
    ex.loop()->add_timer(400ms, [ex]() mutable { ex.respond(200, {}, "late"); });
  });
  client c(s.port());
  c.send(get("/wait"));
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.body, "late");
}

TEST(timeouts, stalled_write_closes_the_stream_and_fires_on_close) {
  std::atomic<bool> closed{false};
  running_server s(short_timeouts(), [&](const request&, exchange ex) {
    ex.begin_stream(200, {});
    ex.on_close([&] { closed = true; });
    // Fill the socket buffers: the client never reads. Only the pending timer owns the pump,
    // so it is freed whether the stream dies first or the loop stops with the timer unfired.
    auto pump = std::make_shared<std::function<void()>>();
    *pump = [ex, self = std::weak_ptr(pump)]() mutable {
      if (!ex.alive()) return;
      if (ex.buffered_bytes() < 1 << 20) ex.write(std::string(64 * 1024, 'z'));
      ex.flush();
      ex.loop()->add_timer(5ms, [next = self.lock()] { (*next)(); });
    };
    (*pump)();
  });
  client c(s.port());
  c.send(get("/firehose"));
  EXPECT_TRUE(testing::eventually([&] { return closed.load(); }));
  EXPECT_TRUE(testing::eventually([&] { return s.server().stats().open_connections == 0; }));
}

}  // namespace
}  // namespace weir::http
