// Graceful drain: stop() stops accepting, lets in-flight responses complete, closes idle connections,
// and makes run() return; a response that outlives drain_timeout is cut (on_close fires).
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "http_test_support.h"

namespace weir::http {
namespace {

using namespace std::chrono_literals;
using testing::client;
using testing::get;
using testing::response;

TEST(drain, in_flight_response_completes_then_run_returns) {
  auto o = testing::test_options();
  o.threads = 2;
  std::atomic<int> started{0};
  server srv(o, [&](const request& req, exchange ex) {
    if (req.path() == "/slow") {
      ++started;
      ex.loop()->add_timer(200ms, [ex]() mutable { ex.respond(200, {}, "finished"); });
      return;
    }
    ex.respond(200, {}, "quick");
  });
  ASSERT_TRUE(srv.start());
  std::atomic<bool> returned{false};
  std::thread runner([&] {
    srv.run();
    returned = true;
  });
  client idle(srv.port());
  idle.send(get("/q"));
  response r;
  ASSERT_TRUE(idle.read_response(r));
  client slow(srv.port());
  slow.send(get("/slow"));
  ASSERT_TRUE(testing::eventually([&] { return started.load() == 1; }));

  srv.stop();
  EXPECT_TRUE(idle.wait_closed());  // idle keep-alive connections close at once
  ASSERT_TRUE(slow.read_response(r));
  EXPECT_EQ(r.body, "finished");
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_TRUE(slow.wait_closed());
  ASSERT_TRUE(testing::eventually([&] { return returned.load(); }));
  runner.join();
  // No longer accepting.
  auto fd = io::connect_tcp("127.0.0.1", srv.port(), false);
  EXPECT_FALSE(fd.has_value());
}

TEST(drain, response_outliving_drain_timeout_is_cut) {
  auto o = testing::test_options();
  o.drain_timeout = 100ms;
  std::atomic<bool> closed{false};
  server srv(o, [&](const request&, exchange ex) {
    ex.begin_stream(200, {});
    ex.write("partial");
    ex.flush();
    ex.on_close([&] { closed = true; });
  });
  ASSERT_TRUE(srv.start());
  std::thread runner([&] { srv.run(); });
  client c(srv.port());
  c.send(get("/forever"));
  ASSERT_TRUE(c.wait_for("partial"));
  srv.stop();
  runner.join();  // returns after drain_timeout
  EXPECT_TRUE(closed.load());
  EXPECT_TRUE(c.wait_closed());
}

TEST(drain, stop_before_run_returns_at_once) {
  server srv(testing::test_options(), [](const request&, exchange ex) { ex.respond(200, {}, ""); });
  ASSERT_TRUE(srv.start());
  srv.stop();
  srv.run();
  SUCCEED();
}

}  // namespace
}  // namespace weir::http
