// http_connection against a scripted loopback server: framing, reuse, streaming and every failure the
// benchmark must see as an error (malformed head, early close, timeout, refused connection).
#include "client/http_connection.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace weir::client {
namespace {

// Accepts one connection; for each scripted reply reads one request head, then writes the reply in
// pieces of `piece` bytes. Closes after the script (or never answers when `silent`).
class scripted_server {
 public:
  scripted_server(std::vector<std::string> replies, std::size_t piece = 1 << 20, bool silent = false) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 4);
    thread_ = std::thread([this, replies = std::move(replies), piece, silent] {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      ++accepted_;
      std::string in;
      for (const auto& reply : replies) {
        while (in.find("\r\n\r\n") == std::string::npos) {
          char buf[4096];
          const auto n = ::recv(c, buf, sizeof buf, 0);
          if (n <= 0) break;
          in.append(buf, static_cast<std::size_t>(n));
        }
        const auto end = in.find("\r\n\r\n");
        if (end == std::string::npos) break;
        requests_.push_back(in.substr(0, end + 4));
        in.erase(0, end + 4);
        if (silent) {
          char buf[64];
          while (::recv(c, buf, sizeof buf, 0) > 0) {
          }
          break;
        }
        for (std::size_t off = 0; off < reply.size(); off += piece) {
          ::send(c, reply.data() + off, std::min(piece, reply.size() - off), MSG_NOSIGNAL);
          if (piece < reply.size()) std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
      }
      ::close(c);
    });
  }
  ~scripted_server() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  endpoint ep() const { return endpoint{"http://127.0.0.1", "127.0.0.1", port_, "/v1/stream"}; }
  int accepted() const { return accepted_; }
  const std::vector<std::string>& requests() const { return requests_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> accepted_{0};
  std::vector<std::string> requests_;
  std::thread thread_;
};

// Runs `start` on a fresh loop until a callback calls loop.stop() (bounded at 10 s).
template <class Start>
void run_loop(io::event_loop& loop, Start&& start) {
  loop.add_timer(std::chrono::milliseconds(10'000), [&] {
    ADD_FAILURE() << "loop did not finish";
    loop.stop();
  });
  start();
  loop.run();
}

const std::string get_head = "GET /v1/stream/s?offset=-1 HTTP/1.1\r\nHost: x\r\n\r\n";

TEST(http_connection, reads_length_and_bodyless_responses_on_one_reused_connection) {
  scripted_server server({"HTTP/1.1 204 No Content\r\nStream-Next-Offset: 0_5\r\n\r\n",
                          "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"});
  io::event_loop loop(0);
  http_connection conn(loop, server.ep());
  std::vector<http_response> got;
  run_loop(loop, [&] {
    conn.request(get_head, {}, true, [&](http_response& r) {
      got.push_back(r);
      conn.request(get_head, {}, true, [&](http_response& r2) {
        got.push_back(r2);
        loop.stop();
      });
    });
  });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].ok()) << got[0].error;
  EXPECT_EQ(got[0].status, 204);
  EXPECT_EQ(got[0].next_offset, "0_5");
  EXPECT_EQ(got[1].status, 200);
  EXPECT_EQ(got[1].body, "hello");
  EXPECT_EQ(got[1].body_bytes, 5u);
  EXPECT_GE(got[1].done_ns, got[1].sent_ns);
  EXPECT_EQ(server.accepted(), 1);
}

TEST(http_connection, keeps_response_headers_only_when_asked) {
  const std::string reply =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nStream-Closed: true\r\nContent-Length: 0\r\n\r\n";
  scripted_server server({reply, reply});
  io::event_loop loop(0);
  http_connection conn(loop, server.ep());
  std::vector<http_response> got;
  run_loop(loop, [&] {
    conn.request(get_head, {}, false, [&](http_response& r) {
      got.push_back(r);
      conn.set_keep_headers(true);
      conn.request(get_head, {}, false, [&](http_response& r2) {
        got.push_back(r2);
        loop.stop();
      });
    });
  });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].headers.empty());
  EXPECT_EQ(got[0].header("content-type"), nullptr);
  ASSERT_NE(got[1].header("content-type"), nullptr);
  EXPECT_EQ(*got[1].header("CONTENT-TYPE"), "text/plain");
  ASSERT_NE(got[1].header("stream-closed"), nullptr);
  EXPECT_EQ(*got[1].header("Stream-Closed"), "true");
  EXPECT_EQ(got[1].header("stream-next-offset"), nullptr);
}

TEST(http_connection, decodes_a_chunked_body_that_arrives_a_byte_at_a_time) {
  scripted_server server(
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;x=y\r\ndefg\r\n0\r\n\r\n"}, 1);
  io::event_loop loop(0);
  http_connection conn(loop, server.ep());
  http_response got;
  run_loop(loop, [&] {
    conn.request(get_head, {}, true, [&](http_response& r) {
      got = r;
      loop.stop();
    });
  });
  EXPECT_TRUE(got.ok()) << got.error;
  EXPECT_EQ(got.body, "abcdefg");
  EXPECT_EQ(got.body_bytes, 7u);
}

TEST(http_connection, sends_the_body_after_the_head) {
  scripted_server server({"HTTP/1.1 204 No Content\r\n\r\n"});
  io::event_loop loop(0);
  http_connection conn(loop, server.ep());
  const std::string head = "POST /v1/stream/s HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n";
  int status = 0;
  run_loop(loop, [&] {
    conn.request(head, "body", false, [&](http_response& r) {
      status = r.status;
      loop.stop();
    });
  });
  EXPECT_EQ(status, 204);
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0], head);
}

TEST(http_connection, streams_body_bytes_as_they_arrive_and_ends_with_the_body) {
  scripted_server server(
      {"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
       "b\r\ndata: one\n\n\r\nb\r\ndata: two\n\n\r\n0\r\n\r\n"},
      7);
  io::event_loop loop(0);
  http_connection conn(loop, server.ep());
  int head_status = 0;
  std::string body;
  bool ended_ok = false;
  run_loop(loop, [&] {
    conn.stream(get_head, {.on_head = [&](const http_response& h) { head_status = h.status; },
                           .on_data = [&](std::string_view d) { body.append(d); },
                           .on_end =
                               [&](http_response& r) {
                                 ended_ok = r.ok();
                                 loop.stop();
                               }});
  });
  EXPECT_EQ(head_status, 200);
  EXPECT_EQ(body, "data: one\n\ndata: two\n\n");
  EXPECT_TRUE(ended_ok);
}

TEST(http_connection, a_malformed_head_is_an_error_not_a_response) {
  scripted_server server({"HTTX/1.1 200 OK\r\n\r\n"});
  io::event_loop loop(0);
  http_connection conn(loop, server.ep());
  http_response got;
  run_loop(loop, [&] {
    conn.request(get_head, {}, false, [&](http_response& r) {
      got = r;
      loop.stop();
    });
  });
  EXPECT_FALSE(got.ok());
  EXPECT_EQ(got.status, 0);
}

TEST(http_connection, a_body_cut_short_by_close_is_an_error) {
  scripted_server server({"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly-some"});
  io::event_loop loop(0);
  http_connection conn(loop, server.ep());
  http_response got;
  run_loop(loop, [&] {
    conn.request(get_head, {}, false, [&](http_response& r) {
      got = r;
      loop.stop();
    });
  });
  EXPECT_FALSE(got.ok());
  EXPECT_EQ(got.error, "connection closed mid-response");
}

TEST(http_connection, an_unanswered_request_times_out) {
  scripted_server server({"never sent"}, 1 << 20, /*silent=*/true);
  io::event_loop loop(0);
  http_connection conn(loop, server.ep());
  http_response got;
  run_loop(loop, [&] {
    conn.request(get_head, {}, false, [&](http_response& r) {
      got = r;
      loop.stop();
    });
    loop.add_timer(std::chrono::milliseconds(50), [&] { conn.expire_if_older(mono_ns()); });
  });
  EXPECT_EQ(got.error, "timeout");
  EXPECT_FALSE(conn.busy());
}

// A sweep expires exchanges older than its cutoff; a bare connect begun after the cutoff is not one,
// whatever the connection did before (many connections opening at once must not time out).
TEST(http_connection, a_connect_in_progress_counts_from_its_own_start) {
  scripted_server server({"never sent"}, 1 << 20, /*silent=*/true);
  io::event_loop loop(0);
  http_connection conn(loop, server.ep());
  bool ok = false;
  std::string why;
  run_loop(loop, [&] {
    const std::int64_t cutoff = mono_ns();
    conn.connect([&](bool connected, std::string_view e) {
      ok = connected;
      why = e;
      loop.stop();
    });
    conn.expire_if_older(cutoff);
  });
  EXPECT_TRUE(ok) << why;
}

TEST(http_connection, a_refused_connection_is_reported_to_connect) {
  std::uint16_t port = 0;
  {
    scripted_server gone({});  // bind a port, then close it
    port = gone.ep().port;
  }
  io::event_loop loop(0);
  http_connection conn(loop, endpoint{"http://127.0.0.1", "127.0.0.1", port, "/v1/stream"});
  bool ok = true;
  run_loop(loop, [&] {
    conn.connect([&](bool connected, std::string_view) {
      ok = connected;
      loop.stop();
    });
  });
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace weir::client
