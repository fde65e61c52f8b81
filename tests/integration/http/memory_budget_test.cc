// The engine's memory bounds (docs/limits.md, "Connections and live readers"): the node-wide budget of
// request bodies in flight (503 + Retry-After at head time, before the body is read; chunked bodies
// counted as they grow), and the per-subscriber queue limit of streamed responses (a peer that never
// reads is closed, the others keep their events; a producer that waits with on_drain() is never closed).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "http_test_support.h"

namespace weir::http {
namespace {

using testing::client;
using testing::eventually;
using testing::get;
using testing::response;
using testing::running_server;

constexpr std::size_t kib = 1024;

// Answers with the size of the body it was given.
void body_size(const request& req, exchange ex) {
  static constexpr header type[] = {{"Content-Type", "text/plain"}};
  ex.respond(200, type, std::to_string(req.body.size()));
}

std::string post_head(std::size_t content_length) {
  return "POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(content_length) + "\r\n\r\n";
}

TEST(memory_budget, a_body_over_the_budget_gets_503_with_retry_after_before_it_is_read) {
  server_options o = testing::test_options();
  o.limits.max_body_bytes = 1024 * kib;
  o.body_budget_bytes = 1024 * kib;
  running_server s(o, body_size);

  // A slow upload: its head declares 700 KiB, a little of the body follows, then it stalls.
  client slow(s.port());
  slow.send(post_head(700 * kib) + std::string(10 * kib, 'a'));
  ASSERT_TRUE(eventually([&] { return s.server().stats().body_bytes_reserved == 700 * kib; }));

  // A second one whose declared size does not fit beside it is refused at once, from its head alone.
  client second(s.port());
  second.send(post_head(700 * kib));
  response r;
  ASSERT_TRUE(second.read_response(r));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.header("Retry-After"), "1");
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_EQ(s.server().stats().bodies_refused, 1u);

  // A body that arrives whole with its head takes nothing from the budget: answered.
  client whole(s.port());
  whole.send(post_head(20 * kib) + std::string(20 * kib, 'w'));
  ASSERT_TRUE(whole.read_response(r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, std::to_string(20 * kib));

  // The slow upload completes; its share is given back and the same upload now fits.
  slow.send(std::string(690 * kib, 'a'));
  ASSERT_TRUE(slow.read_response(r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, std::to_string(700 * kib));
  EXPECT_EQ(s.server().stats().body_bytes_reserved, 0u);
  client again(s.port());
  again.send(post_head(700 * kib));
  again.send(std::string(700 * kib, 'b'));
  ASSERT_TRUE(again.read_response(r));
  EXPECT_EQ(r.status, 200);
}

TEST(memory_budget, a_closed_upload_gives_its_share_back) {
  server_options o = testing::test_options();
  o.limits.max_body_bytes = 1024 * kib;
  o.body_budget_bytes = 1024 * kib;
  running_server s(o, body_size);
  {
    client gone(s.port());
    gone.send(post_head(900 * kib) + "x");
    ASSERT_TRUE(eventually([&] { return s.server().stats().body_bytes_reserved == 900 * kib; }));
  }
  ASSERT_TRUE(eventually([&] { return s.server().stats().body_bytes_reserved == 0; }));
  client next(s.port());
  next.send(post_head(900 * kib));
  next.send(std::string(900 * kib, 'n'));
  response r;
  ASSERT_TRUE(next.read_response(r));
  EXPECT_EQ(r.status, 200);
}

TEST(memory_budget, chunked_bodies_count_as_they_grow) {
  server_options o = testing::test_options();
  o.limits.max_body_bytes = 1024 * kib;
  o.body_budget_bytes = 512 * kib;
  running_server s(o, body_size);
  auto chunk = [](std::size_t n, char c) {
    char size[20];
    int len = std::snprintf(size, sizeof size, "%zx", n);
    return std::string(size, static_cast<std::size_t>(len)) + "\r\n" + std::string(n, c) + "\r\n";
  };
  const std::string head = "POST /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";

  client a(s.port());
  a.send(head + chunk(300 * kib, 'a'));
  ASSERT_TRUE(eventually([&] { return s.server().stats().body_bytes_reserved >= 300 * kib; }));

  // b starts within the budget and is refused once its growing body passes what is left.
  client b(s.port());
  b.send(head + chunk(100 * kib, 'b'));
  ASSERT_TRUE(eventually([&] { return s.server().stats().body_bytes_reserved >= 400 * kib; }));
  b.send(chunk(200 * kib, 'b'));
  response r;
  ASSERT_TRUE(b.read_response(r));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.header("Retry-After"), "1");

  a.send("0\r\n\r\n");
  ASSERT_TRUE(a.read_response(r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, std::to_string(300 * kib));
  EXPECT_TRUE(eventually([&] { return s.server().stats().body_bytes_reserved == 0; }));
}

// Subscribers of one broadcast; used only on the server's loop.
struct subscribers {
  std::vector<exchange> all;
};

constexpr header sse_headers[] = {{"Content-Type", "text/event-stream"}};

// Runs `fn` on the server's (only) loop and waits until it ran.
void on_loop(running_server& s, std::function<void()> fn) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  s.server().loop(0).post([fn = std::move(fn), done] {
    fn();
    done->store(true);
  });
  ASSERT_TRUE(eventually([&] { return done->load(); }));
}

TEST(memory_budget, a_subscriber_that_never_reads_is_closed_and_the_others_keep_their_events) {
  server_options o = testing::test_options();
  o.max_stream_queue_bytes = 256 * kib;
  auto subs = std::make_shared<subscribers>();
  running_server s(o, [subs](const request&, exchange ex) {
    ex.begin_stream(200, sse_headers);
    ex.flush();
    subs->all.push_back(ex);
  });
  client stuck(s.port());
  stuck.send(get("/events"));
  client reader(s.port());
  reader.send(get("/events"));
  ASSERT_TRUE(eventually([&] { return s.server().stats().requests == 2; }));

  // Broadcast 32 KiB events; the reader reads each one, the stuck subscriber never reads.
  const std::string filler(32 * kib, 'x');
  int sent = 0;
  while (s.server().stats().streams_dropped == 0 && sent < 2000) {
    ++sent;
    std::string event = "data: " + std::to_string(sent) + " " + filler + "\n\n";
    on_loop(s, [subs, event] {
      for (auto& ex : subs->all) {
        ex.write(event);
        ex.flush();
      }
    });
    ASSERT_TRUE(reader.wait_for("data: " + std::to_string(sent) + " ")) << "event " << sent;
    reader.buffer().clear();
  }
  EXPECT_EQ(s.server().stats().streams_dropped, 1u);
  EXPECT_TRUE(stuck.wait_closed()) << "the subscriber that never reads was not closed";

  // The reader is still served.
  on_loop(s, [subs] {
    for (auto& ex : subs->all) {
      ex.write("data: after\n\n");
      ex.flush();
    }
  });
  EXPECT_TRUE(reader.wait_for("data: after\n\n"));
  EXPECT_EQ(s.server().stats().streams_dropped, 1u);
}

TEST(memory_budget, a_producer_that_waits_for_drain_is_never_closed) {
  server_options o = testing::test_options();
  o.max_stream_queue_bytes = 128 * kib;
  constexpr std::size_t piece = 32 * kib;
  constexpr int pieces = 128;  // 4 MiB through a 128 KiB queue
  running_server s(o, [](const request&, exchange ex) {
    ex.begin_stream(200, sse_headers);
    auto next = std::make_shared<std::function<void()>>();
    auto count = std::make_shared<int>(0);
    *next = [ex, next, count]() mutable {
      if (!ex.alive()) {
        *next = nullptr;
        return;
      }
      ex.write(std::string(piece, static_cast<char>('a' + *count % 26)));
      ex.flush();
      if (++*count == pieces) {
        ex.end();
        *next = nullptr;  // break the cycle
        return;
      }
      ex.on_drain(piece, [next] {
        if (*next) (*next)();
      });
    };
    (*next)();
  });
  client c(s.port());
  c.send(get("/events"));
  response r;
  ASSERT_TRUE(c.read_response(r, false, std::chrono::milliseconds(20'000)));
  EXPECT_EQ(r.status, 200);
  ASSERT_EQ(r.body.size(), piece * pieces);
  for (int i = 0; i < pieces; ++i) {
    ASSERT_EQ(r.body[static_cast<std::size_t>(i) * piece], static_cast<char>('a' + i % 26)) << i;
  }
  EXPECT_EQ(s.server().stats().streams_dropped, 0u);
}

}  // namespace
}  // namespace weir::http
