// HTTP/2 with prior knowledge (h2c) on the engine's port, against nghttp2's client session: requests reach
// the same exchange as HTTP/1.1, responses with bodies, request bodies larger than every window, streamed
// responses with per-stream back-pressure and the connection's queue budget, resets, and HTTP/1.1 still
// served on the same port.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "http/h2_session.h"
#include "integration/http/http_test_support.h"
#include "unit/http/h2_test_client.h"

namespace weir::http {
namespace {

using namespace std::chrono_literals;
using testing::h2_client;
using testing::running_server;

constexpr header sse_headers[] = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};

handler echo_handler() {
  return [](const request& req, exchange ex) {
    std::string body = std::string(req.method() == method::post ? "post " : "get ") +
                       std::string(req.path()) + " q=" + std::string(req.query()) +
                       " host=" + std::string(req.find("Host") ? req.find("host")->value : "") +
                       " len=" + std::to_string(req.body.size());
    const header h[] = {{"X-Echo", "yes"}, {"Connection", "keep-alive"}};
    ex.respond(200, h, body);
  };
}

TEST(h2_session, get_and_post_reach_the_same_exchange) {
  running_server s(testing::test_options(), echo_handler());
  h2_client c(s.port());
  auto a = c.request("GET", "/a/b?x=1");
  auto b = c.request("POST", "/post", {}, "hello");
  ASSERT_TRUE(c.run_until([&] { return c.response(a).closed && c.response(b).closed; }));
  EXPECT_EQ(c.response(a).status, 200);
  EXPECT_EQ(c.response(a).body, "get /a/b q=x=1 host=127.0.0.1 len=0");
  EXPECT_EQ(c.response(a).header("x-echo"), "yes");   // lowercase on the wire
  EXPECT_EQ(c.response(a).header("connection"), "");  // connection-specific: left out (RFC 9113 8.2.2)
  EXPECT_EQ(c.response(a).header("server"), "weir");
  EXPECT_FALSE(c.response(a).header("date").empty());
  EXPECT_EQ(c.response(a).header("content-length"), std::to_string(c.response(a).body.size()));
  EXPECT_EQ(c.response(b).body, "post /post q= host=127.0.0.1 len=5");
  EXPECT_EQ(c.response(a).error_code, 0u);
  EXPECT_EQ(s.server().stats().h2_connections, 1u);
  EXPECT_EQ(s.server().stats().h2_streams, 2u);
  EXPECT_EQ(s.server().stats().requests, 2u);
}

TEST(h2_session, response_field_names_of_every_length_go_out_in_lowercase) {
  // Names of 8 to 16 bytes are lowered a word at a time, the others a byte at a time; the bytes
  // around 'A'..'Z' ('^', '`', '|', '~') must come through unchanged.
  running_server s(testing::test_options(), [](const request&, exchange ex) {
    const header h[] = {{"ETag", "a"},
                        {"X-Zz^_`|", "b"},
                        {"X-Zz^_`|~Aa9", "c"},
                        {"X-ABCDEFGHIJKLMN", "d"},
                        {"X-ABCDEFGHIJKLMNO", "e"}};
    ex.respond(200, h, "ok");
  });
  h2_client c(s.port());
  auto a = c.request("GET", "/");
  ASSERT_TRUE(c.run_until([&] { return c.response(a).closed; }));
  EXPECT_EQ(c.response(a).status, 200);
  EXPECT_EQ(c.response(a).header("etag"), "a");
  EXPECT_EQ(c.response(a).header("x-zz^_`|"), "b");
  EXPECT_EQ(c.response(a).header("x-zz^_`|~aa9"), "c");
  EXPECT_EQ(c.response(a).header("x-abcdefghijklmn"), "d");
  EXPECT_EQ(c.response(a).header("x-abcdefghijklmno"), "e");
}

TEST(h2_session, head_has_a_length_and_no_body_and_204_has_neither) {
  running_server s(testing::test_options(), [](const request& req, exchange ex) {
    ex.respond(req.path() == "/none" ? 204 : 200, {}, "twelve bytes");
  });
  h2_client c(s.port());
  auto a = c.request("HEAD", "/");
  auto b = c.request("GET", "/none");
  ASSERT_TRUE(c.run_until([&] { return c.response(a).closed && c.response(b).closed; }));
  EXPECT_EQ(c.response(a).status, 200);
  EXPECT_EQ(c.response(a).header("content-length"), "12");
  EXPECT_EQ(c.response(a).body, "");
  EXPECT_EQ(c.response(b).status, 204);
  EXPECT_EQ(c.response(b).header("content-length"), "");
  EXPECT_EQ(c.response(b).body, "");
}

TEST(h2_session, request_and_response_bodies_larger_than_every_window) {
  // 5 MiB each way: more than the stream window (1 MiB) and the client's default 64 KiB windows, so
  // both directions move only as WINDOW_UPDATEs come.
  running_server s(testing::test_options(), [](const request& req, exchange ex) {
    std::string reply(req.body.rbegin(), req.body.rend());
    ex.respond(200, {}, reply);
  });
  h2_client c(s.port());
  std::string body(5u << 20, 'x');
  for (std::size_t i = 0; i < body.size(); i += 4096) body[i] = static_cast<char>('a' + i / 4096 % 26);
  auto id = c.request("PUT", "/big", {}, body);
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.response(id).status, 200);
  EXPECT_EQ(c.response(id).body, std::string(body.rbegin(), body.rend()));
}

TEST(h2_session, a_body_over_the_limit_gets_413_and_the_stream_is_reset) {
  auto o = testing::test_options();
  o.limits.max_body_bytes = 1000;
  std::atomic<int> handled{0};
  running_server s(o, [&](const request&, exchange ex) {
    ++handled;
    ex.respond(200, {}, "ok");
  });
  h2_client c(s.port());
  auto big = c.request("POST", "/big", {}, std::string(100000, 'b'));
  auto declared = c.request("POST", "/declared", {{"content-length", "5000"}}, std::string(5000, 'c'));
  ASSERT_TRUE(c.run_until([&] { return c.response(big).closed && c.response(declared).closed; }));
  EXPECT_EQ(c.response(big).status, 413);
  EXPECT_EQ(c.response(declared).status, 413);
  // The connection serves on.
  auto ok = c.request("POST", "/small", {}, "abc");
  ASSERT_TRUE(c.wait_closed(ok));
  EXPECT_EQ(c.response(ok).status, 200);
  EXPECT_EQ(handled.load(), 1);
}

TEST(h2_session, sse_streams_share_one_connection) {
  // 200 live tails on one connection (more than HTTP/1.1's six per origin), each fed from a timer.
  running_server s(testing::test_options(), [](const request& req, exchange ex) {
    ex.begin_stream(200, sse_headers);
    ex.flush();
    std::string name(req.path());
    auto count = std::make_shared<int>(0);
    auto tick = std::make_shared<std::function<void()>>();
    *tick = [ex, count, tick, name]() mutable {
      ex.write("data: " + name + " " + std::to_string(++*count) + "\n\n");
      ex.flush();
      if (*count == 3) {
        ex.end();
        *tick = nullptr;
        return;
      }
      ex.loop()->add_timer(1ms, [tick] { (*tick)(); });
    };
    ex.loop()->add_timer(1ms, [tick] { (*tick)(); });
  });
  h2_client c(s.port());
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 200; ++i) ids.push_back(c.request("GET", "/s" + std::to_string(i)));
  ASSERT_TRUE(c.run_until([&] {
    for (auto id : ids) {
      if (!c.response(id).closed) return false;
    }
    return true;
  }));
  for (int i = 0; i < 200; ++i) {
    auto& r = c.response(ids[static_cast<std::size_t>(i)]);
    std::string n = "/s" + std::to_string(i);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.header("content-type"), "text/event-stream");
    EXPECT_EQ(r.body, "data: " + n + " 1\n\ndata: " + n + " 2\n\ndata: " + n + " 3\n\n");
    EXPECT_EQ(r.error_code, 0u);
  }
}

TEST(h2_session, a_reset_stream_fires_on_close_and_others_go_on) {
  std::atomic<int> closed{0};
  std::vector<exchange> live;
  running_server s(testing::test_options(), [&](const request& req, exchange ex) {
    if (req.path() == "/plain") {
      ex.respond(200, {}, "plain");
      return;
    }
    ex.begin_stream(200, sse_headers);
    ex.write("data: hello\n\n");
    ex.flush();
    ex.on_close([&] { ++closed; });
    live.push_back(ex);
  });
  h2_client c(s.port());
  auto tail = c.request("GET", "/tail");
  ASSERT_TRUE(c.run_until([&] { return !c.response(tail).body.empty(); }));
  nghttp2_submit_rst_stream(c.session(), NGHTTP2_FLAG_NONE, tail, NGHTTP2_CANCEL);
  auto plain = c.request("GET", "/plain");
  ASSERT_TRUE(c.run_until([&] { return c.response(plain).closed && closed.load() == 1; }));
  EXPECT_EQ(c.response(plain).body, "plain");
  EXPECT_EQ(c.response(tail).body, "data: hello\n\n");
}

TEST(h2_session, closing_the_connection_fires_on_close_of_every_open_stream) {
  std::atomic<int> closed{0};
  std::atomic<int> started{0};
  running_server s(testing::test_options(), [&](const request&, exchange ex) {
    ex.begin_stream(200, sse_headers);
    ex.flush();
    ex.on_close([&] { ++closed; });
    ++started;
  });
  {
    h2_client c(s.port());
    for (int i = 0; i < 10; ++i) c.request("GET", "/t" + std::to_string(i));
    ASSERT_TRUE(c.run_until([&] { return started.load() == 10; }));
  }
  EXPECT_TRUE(testing::eventually([&] { return closed.load() == 10; }));
  EXPECT_TRUE(testing::eventually([&] { return s.server().stats().open_connections == 0; }));
}

TEST(h2_session, a_producer_waits_for_its_stream_window_with_on_drain) {
  // The client announces a 16 KiB stream window and reads slowly (its window opens only as it
  // processes): the producer writes 1 MiB in 64 KiB pieces, each after on_drain, so the stream's queue
  // never passes one piece and never hits max_stream_queue_bytes.
  auto o = testing::test_options();
  o.max_stream_queue_bytes = 256 * 1024;
  std::atomic<std::size_t> most_queued{0};
  running_server s(o, [&](const request&, exchange ex) {
    ex.begin_stream(200, {});
    auto left = std::make_shared<int>(16);
    auto next = std::make_shared<std::function<void()>>();
    *next = [ex, left, next, &most_queued]() mutable {
      most_queued = std::max<std::size_t>(most_queued, ex.buffered_bytes());
      if (*left == 0) {
        ex.end();
        *next = nullptr;
        return;
      }
      --*left;
      ex.write(std::string(64 * 1024, 'z'));
      ex.flush();
      ex.on_drain(0, [next] { (*next)(); });
    };
    (*next)();
  });
  h2_client c(s.port(), {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 16 * 1024}});
  auto id = c.request("GET", "/bulk");
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.response(id).error_code, 0u);
  EXPECT_EQ(c.response(id).body.size(), 1u << 20);
  EXPECT_LE(most_queued.load(), 64u * 1024);
  EXPECT_EQ(s.server().stats().streams_dropped, 0u);
}

// HEAD: a short answer. Anything else: a tail that writes `pieces` x `bytes` at once and counts its
// on_close in `closed`.
handler tail_handler(std::atomic<int>& closed, int pieces, std::size_t bytes) {
  return [&closed, pieces, bytes](const request& req, exchange ex) {
    if (req.method() == method::head) {
      ex.respond(200, {}, "abc");
      return;
    }
    ex.begin_stream(200, sse_headers);
    ex.on_close([&closed] { ++closed; });
    for (int i = 0; i < pieces; ++i) ex.write(std::string(bytes, 'e'));
    ex.flush();
  };
}

TEST(h2_session, a_stream_whose_reader_never_opens_its_window_is_dropped_alone) {
  // Initial window 0: no DATA may be sent on any stream. A tail that keeps writing passes
  // max_stream_queue_bytes and is reset (CANCEL); the connection and a HEAD request (no DATA) go on.
  auto o = testing::test_options();
  o.max_stream_queue_bytes = 64 * 1024;
  std::atomic<int> closed{0};
  running_server s(o, tail_handler(closed, 20, 8 * 1024));
  h2_client c(s.port(), {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}});
  auto tail = c.request("GET", "/tail");
  ASSERT_TRUE(c.wait_closed(tail));
  EXPECT_EQ(c.response(tail).error_code, static_cast<std::uint32_t>(NGHTTP2_CANCEL));
  EXPECT_TRUE(testing::eventually([&] { return closed.load() == 1; }));
  EXPECT_EQ(s.server().stats().streams_dropped, 1u);
  auto head = c.request("HEAD", "/");
  ASSERT_TRUE(c.wait_closed(head));
  EXPECT_EQ(c.response(head).status, 200);
}

TEST(h2_session, the_connection_queue_budget_resets_the_streams_holding_most) {
  // Window 0 again: nothing moves. Ten tails of 40 KiB each stay under max_stream_queue_bytes, but the
  // connection may hold 256 KiB: the six first fit, each later one would pass it and is reset.
  auto o = testing::test_options();
  o.max_stream_queue_bytes = 64 * 1024;
  o.h2.connection_queue_bytes = 256 * 1024;
  std::atomic<int> closed{0};
  running_server s(o, tail_handler(closed, 1, 40 * 1024));
  h2_client c(s.port(), {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}});
  std::vector<std::int32_t> tails;
  for (int i = 0; i < 10; ++i) {
    tails.push_back(c.request("GET", "/tail/" + std::to_string(i)));
    // Answered (its HEADERS), or reset before they left.
    ASSERT_TRUE(c.run_until(
        [&] { return c.response(tails.back()).status == 200 || c.response(tails.back()).closed; }));
  }
  for (int i = 6; i < 10; ++i) {
    ASSERT_TRUE(c.wait_closed(tails[i])) << i;
    EXPECT_EQ(c.response(tails[i]).error_code, static_cast<std::uint32_t>(NGHTTP2_CANCEL)) << i;
  }
  EXPECT_TRUE(testing::eventually([&] { return closed.load() == 4; }));
  EXPECT_EQ(s.server().stats().streams_dropped, 4u);
  auto head = c.request("HEAD", "/");
  ASSERT_TRUE(c.wait_closed(head));
  EXPECT_EQ(c.response(head).status, 200);
  for (int i = 0; i < 6; ++i) EXPECT_FALSE(c.response(tails[i]).closed) << i;
}

TEST(h2_session, http1_is_served_on_the_same_port) {
  running_server s(testing::test_options(), echo_handler());
  testing::client c(s.port());
  // A first read that is a prefix of the preface ("P") must not be mistaken for it.
  c.send("P");
  c.send("OST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi");
  testing::response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "post /x q= host=h len=2");
  c.send(testing::get("/y"));
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.body, "get /y q= host=t len=0");
  EXPECT_EQ(s.server().stats().h2_connections, 0u);
}

TEST(h2_session, the_preface_in_pieces_is_still_http2) {
  running_server s(testing::test_options(), echo_handler());
  testing::client c(s.port());
  for (char ch : h2_preface) c.send(std::string(1, ch));
  c.send(testing::h2_frame(NGHTTP2_SETTINGS, 0, 0, ""));
  // The server's first frame is its SETTINGS (RFC 9113 3.4).
  ASSERT_TRUE(testing::eventually([&] {
    c.fill(10ms);
    return c.buffer().size() >= 9;
  }));
  EXPECT_EQ(c.buffer()[3], static_cast<char>(NGHTTP2_SETTINGS));
  EXPECT_EQ(s.server().stats().h2_connections, 1u);
}

TEST(h2_session, can_be_turned_off) {
  auto o = testing::test_options();
  o.h2.enabled = false;
  running_server s(o, echo_handler());
  testing::client c(s.port());
  c.send(std::string(h2_preface));
  testing::response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.status, 505);  // "PRI * HTTP/2.0": a version the HTTP/1.1 parser does not serve
  EXPECT_EQ(s.server().stats().h2_connections, 0u);
}

TEST(h2_session, an_answer_from_another_core_comes_back_with_post) {
  auto o = testing::test_options();
  o.threads = 2;
  running_server* srv = nullptr;
  running_server s(o, [&](const request&, exchange ex) {
    unsigned other = (ex.loop()->index() + 1) % 2;
    srv->server().loop(other).post([ex]() mutable {
      std::string body = "from core " + std::to_string(io::event_loop::current()->index());
      ex.loop()->post([ex, body]() mutable { ex.respond(200, {}, body); });
    });
  });
  srv = &s;
  h2_client c(s.port());
  auto id = c.request("GET", "/");
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.response(id).status, 200);
  EXPECT_EQ(c.response(id).body.rfind("from core ", 0), 0u);
}

TEST(h2_session, answers_given_in_one_turn_leave_in_one_send) {
  // Each request is answered from a task of its own, as a handler that waits for a commit does: the
  // answers of one loop turn go out together (loop_context::flush_later), not one send each.
  running_server s(testing::test_options(), [](const request&, exchange ex) {
    ex.loop()->post([ex]() mutable { ex.respond(200, {}, "ok"); });
  });
  h2_client c(s.port());
  ASSERT_TRUE(c.wait_closed(c.request("GET", "/warm-up")));  // SETTINGS and their ACKs exchanged
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(c.request("GET", "/" + std::to_string(i)));
  // All eight HEADERS frames in one write, so that the server reads them at once.
  std::string frames;
  const std::uint8_t* data = nullptr;
  for (ssize_t n; (n = nghttp2_session_mem_send(c.session(), &data)) > 0;) {
    frames.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
  const std::uint64_t before = s.server().stats().sends;
  c.raw(frames);
  ASSERT_TRUE(c.run_until([&] {
    return std::all_of(ids.begin(), ids.end(), [&](std::int32_t id) { return c.response(id).closed; });
  }));
  for (std::int32_t id : ids) EXPECT_EQ(c.response(id).body, "ok");
  // One send; two if the kernel handed the frames over in two reads. Each answer sent at once: eight.
  EXPECT_LE(s.server().stats().sends - before, 2u);
}

TEST(h2_session, a_request_body_that_stops_coming_gets_408_and_the_other_streams_go_on) {
  auto o = testing::test_options();
  o.body_timeout = 200ms;
  std::vector<exchange> tails;
  running_server s(o, [&](const request& req, exchange ex) {
    if (req.path() == "/tail") {
      ex.begin_stream(200, sse_headers);
      ex.write("data: live\n\n");
      ex.flush();
      tails.push_back(ex);
      return;
    }
    ex.respond(200, {}, "done");
  });
  h2_client c(s.port());
  auto tail = c.request("GET", "/tail");
  // A body announced (no END_STREAM) that never comes: nghttp2 defers the empty source forever.
  auto slow = c.request("POST", "/slow", {{"content-length", "10"}}, "", true);
  ASSERT_TRUE(c.run_until([&] { return c.response(slow).closed; }));
  EXPECT_EQ(c.response(slow).status, 408);
  EXPECT_FALSE(c.response(tail).closed);  // the live tail is untouched
  EXPECT_EQ(c.response(tail).body, "data: live\n\n");
}

TEST(h2_session, content_length_zero_is_a_complete_request_without_end_stream) {
  // undici sends an empty POST as HEADERS with content-length 0 and ends the stream only later (or
  // never): the request is complete at its headers (RFC 9113 8.1.1), and the stream is reset with
  // NO_ERROR after the answer.
  running_server s(testing::test_options(), echo_handler());
  h2_client c(s.port());
  auto id = c.request("POST", "/empty", {{"content-length", "0"}}, "", true);
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_EQ(c.response(id).status, 200);
  EXPECT_EQ(c.response(id).body, "post /empty q= host=127.0.0.1 len=0");
  EXPECT_EQ(c.response(id).error_code, static_cast<std::uint32_t>(NGHTTP2_NO_ERROR));
}

TEST(h2_session, an_idle_connection_gets_goaway_and_is_closed) {
  auto o = testing::test_options();
  o.idle_timeout = 100ms;
  running_server s(o, echo_handler());
  h2_client c(s.port());
  auto id = c.request("GET", "/once");
  ASSERT_TRUE(c.wait_closed(id));
  EXPECT_TRUE(c.wait_eof());
  EXPECT_TRUE(c.goaway());
  EXPECT_EQ(c.goaway_code(), static_cast<std::uint32_t>(NGHTTP2_NO_ERROR));
}

TEST(h2_session, server_stop_drains_open_streams_with_goaway) {
  auto keep = std::make_shared<std::vector<exchange>>();
  auto o = testing::test_options();
  o.drain_timeout = 300ms;
  running_server s(o, [keep](const request&, exchange ex) {
    ex.begin_stream(200, sse_headers);
    ex.flush();
    keep->push_back(ex);
  });
  h2_client c(s.port());
  auto id = c.request("GET", "/tail");
  ASSERT_TRUE(c.run_until([&] { return c.response(id).status == 200; }));
  s.stop_and_join();  // drain: GOAWAY, then the drain timeout closes what is left
  EXPECT_TRUE(c.wait_eof());
  EXPECT_TRUE(c.goaway());
  EXPECT_EQ(c.goaway_code(), static_cast<std::uint32_t>(NGHTTP2_NO_ERROR));
}

}  // namespace
}  // namespace weir::http
