// Asynchronous answers and streamed responses: SSE fed from a timer, another core pushing into a
// stream with post(), client disconnects (on_close), stale exchange handles, ordering while an
// exchange is unanswered, and back-pressure.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "http_test_support.h"

namespace weir::http {
namespace {

using namespace std::chrono_literals;
using testing::client;
using testing::get;
using testing::response;
using testing::running_server;

constexpr header sse_headers[] = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};

TEST(streaming, sse_stream_fed_from_a_timer) {
  running_server s(testing::test_options(), [](const request&, exchange ex) {
    ex.begin_stream(200, sse_headers);
    ex.flush();
    auto count = std::make_shared<int>(0);
    auto tick = std::make_shared<std::function<void()>>();
    *tick = [ex, count, tick]() mutable {
      ex.write("data: tick " + std::to_string(++*count) + "\n\n");
      ex.flush();
      if (*count == 3) {
        ex.end();
        *tick = nullptr;  // break the cycle
        return;
      }
      ex.loop()->add_timer(10ms, [tick] { (*tick)(); });
    };
    ex.loop()->add_timer(10ms, [tick] { (*tick)(); });
  });
  client c(s.port());
  c.send(get("/events"));
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Type"), "text/event-stream");
  EXPECT_EQ(r.header("Transfer-Encoding"), "chunked");
  EXPECT_EQ(r.body, "data: tick 1\n\ndata: tick 2\n\ndata: tick 3\n\n");
  // The connection is reusable after the stream ended.
  c.send(get("/events"));
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.body.size(), 42u);
}

TEST(streaming, headers_are_sent_by_flush_before_any_data) {
  std::atomic<bool> flushed{false};
  running_server s(testing::test_options(), [&](const request&, exchange ex) {
    ex.begin_stream(200, sse_headers);
    ex.loop()->add_timer(1ms, [ex]() mutable { ex.flush(); });
    // Never ended: the client sees the head, then the test closes.
  });
  client c(s.port());
  c.send(get("/events"));
  ASSERT_TRUE(c.wait_for("\r\n\r\n"));
  EXPECT_NE(c.buffer().find("text/event-stream"), std::string::npos);
}

TEST(streaming, another_core_pushes_into_an_open_stream_with_post) {
  auto o = testing::test_options();
  o.threads = 2;
  running_server* srv = nullptr;
  std::atomic<unsigned> producer_core{99};
  running_server s(o, [&](const request&, exchange ex) {
    ex.begin_stream(200, sse_headers);
    ex.flush();
    unsigned other = (ex.loop()->index() + 1) % 2;
    // Hop to the other core (think: the core that owns a stream), produce there, come back to write.
    srv->server().loop(other).post([ex, &producer_core] {
      producer_core = io::event_loop::current()->index();
      for (int i = 0; i < 5; ++i) {
        std::string event = "data: " + std::to_string(i) + "\n\n";
        ex.loop()->post([ex, event]() mutable {
          ex.write(event);
          ex.flush();
        });
      }
      ex.loop()->post([ex]() mutable { ex.end(); });
    });
  });
  srv = &s;
  client c(s.port());
  c.send(get("/live"));
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.body, "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n");
  EXPECT_LT(producer_core.load(), 2u);
}

TEST(streaming, client_disconnect_fires_on_close_and_leaves_the_server_healthy) {
  std::atomic<int> closed{0};
  std::atomic<bool> alive_after{true};
  std::atomic<bool> checked{false};
  running_server s(testing::test_options(), [&](const request& req, exchange ex) {
    if (req.path() == "/ok") {
      ex.respond(200, {}, "fine");
      return;
    }
    ex.begin_stream(200, sse_headers);
    ex.write("data: first\n\n");
    ex.flush();
    ex.on_close([&closed, ex]() mutable {
      ++closed;
      // The handle is inert now; every call is a no-op.
      ex.write("data: ignored\n\n");
      ex.flush();
      ex.end();
    });
    // Keep the handle past the close and use it later from a timer.
    ex.loop()->add_timer(300ms, [ex, &alive_after, &checked]() mutable {
      alive_after = ex.alive();
      ex.write("late");
      ex.end();
      checked = true;
    });
  });
  {
    client c(s.port());
    c.send(get("/stream"));
    ASSERT_TRUE(c.wait_for("data: first"));
  }  // client goes away mid-response
  ASSERT_TRUE(testing::eventually([&] { return closed.load() == 1; }));
  ASSERT_TRUE(testing::eventually([&] { return checked.load(); }));
  EXPECT_FALSE(alive_after.load());
  EXPECT_EQ(closed.load(), 1);
  EXPECT_TRUE(testing::eventually([&] { return s.server().stats().open_connections == 0; }));
  client c2(s.port());
  c2.send(get("/ok"));
  response r;
  ASSERT_TRUE(c2.read_response(r));
  EXPECT_EQ(r.body, "fine");
}

TEST(streaming, on_close_is_not_called_after_the_exchange_finished) {
  std::atomic<int> closed{0};
  running_server s(testing::test_options(), [&](const request&, exchange ex) {
    ex.on_close([&] { ++closed; });
    ex.respond(200, {}, "done");
  });
  {
    client c(s.port());
    c.send(get("/x"));
    response r;
    ASSERT_TRUE(c.read_response(r));
  }
  ASSERT_TRUE(testing::eventually([&] { return s.server().stats().open_connections == 0; }));
  EXPECT_EQ(closed.load(), 0);
}

TEST(streaming, pipelined_requests_wait_behind_an_unanswered_exchange) {
  running_server s(testing::test_options(), [](const request& req, exchange ex) {
    if (req.path() == "/slow") {
      ex.loop()->add_timer(50ms, [ex]() mutable { ex.respond(200, {}, "slow"); });
      return;
    }
    ex.respond(200, {}, std::string(req.path()));
  });
  client c(s.port());
  c.send(get("/slow") + get("/fast1") + get("/slow") + get("/fast2"));
  response r;
  for (const char* want : {"slow", "/fast1", "slow", "/fast2"}) {
    ASSERT_TRUE(c.read_response(r));
    EXPECT_EQ(r.body, want);
  }
  EXPECT_EQ(s.server().stats().requests, 4u);
}

TEST(streaming, peer_that_does_not_read_stops_request_processing) {
  const std::string big(256 * 1024, 'b');
  running_server s(testing::test_options(), [&](const request&, exchange ex) { ex.respond(200, {}, big); });
  client c(s.port());
  constexpr int n = 400;  // 100 MiB of answers: far more than the socket buffers hold
  std::string batch;
  for (int i = 0; i < n; ++i) batch += get("/b");
  c.send(batch);
  // Give the server time to fill every buffer it can; it must then stop taking requests.
  std::this_thread::sleep_for(300ms);
  auto handled = s.server().stats().requests;
  EXPECT_LT(handled, static_cast<std::uint64_t>(n));
  // Reading resumes the flow and every answer arrives, in order and whole.
  response r;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(c.read_response(r)) << i;
    ASSERT_EQ(r.body.size(), big.size());
  }
  EXPECT_EQ(s.server().stats().requests, static_cast<std::uint64_t>(n));
}

TEST(streaming, http10_stream_is_close_delimited) {
  running_server s(testing::test_options(), [](const request&, exchange ex) {
    ex.begin_stream(200, sse_headers);
    ex.write("one ");
    ex.write("two");
    ex.end();
  });
  client c(s.port());
  c.send("GET /s HTTP/1.0\r\n\r\n");
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.header("Transfer-Encoding"), "");
  EXPECT_EQ(r.body, "one two");
}

}  // namespace
}  // namespace weir::http
