// sync_connection against a loopback peer that answers with a scripted reply and then stays silent with
// the connection open: whole responses with their headers, streamed bodies ended by the caller, and the
// idle watchdog that notices a stream gone quiet.
#include "cli/sync_connection.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace weir::cli {
namespace {

// Accepts connections one after another; on each, reads one request head and writes `reply`, then keeps
// the connection open (silent) until the next connection arrives or the peer is destroyed.
class silent_peer {
 public:
  explicit silent_peer(std::string reply) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 4);
    thread_ = std::thread([this, reply = std::move(reply)] {
      while (true) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        conns_.push_back(c);
        std::string in;
        while (in.find("\r\n\r\n") == std::string::npos) {
          char buf[4096];
          const auto n = ::recv(c, buf, sizeof buf, 0);
          if (n <= 0) break;
          in.append(buf, static_cast<std::size_t>(n));
        }
        ::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      }
    });
  }
  ~silent_peer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    for (int c : conns_) ::close(c);
  }
  client::endpoint ep() const {
    return client::endpoint{"http://127.0.0.1", "127.0.0.1", port_, "/v1/stream"};
  }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::vector<int> conns_;
  std::thread thread_;
};

const std::string get_head = "GET /v1/stream/s?offset=-1&live=sse HTTP/1.1\r\nHost: x\r\n\r\n";

TEST(sync_connection, a_request_returns_the_whole_response_with_its_headers) {
  silent_peer peer(
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nStream-Next-Offset: 0_5\r\n"
      "Content-Length: 5\r\n\r\nhello");
  sync_connection conn(peer.ep());
  auto r = conn.request(get_head, {}, 10'000);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
  EXPECT_EQ(r.next_offset, "0_5");
  ASSERT_NE(r.header("content-type"), nullptr);
  EXPECT_EQ(*r.header("content-type"), "text/plain");
}

TEST(sync_connection, a_request_without_an_answer_times_out) {
  silent_peer peer("");  // reads the request, never answers
  sync_connection conn(peer.ep());
  auto r = conn.request(get_head, {}, 100);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, "timeout");
}

TEST(sync_connection, the_caller_ends_a_stream_and_the_next_exchange_reconnects) {
  silent_peer peer("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n: hi\n\n");
  sync_connection conn(peer.ep());
  std::string got;
  int heads = 0;
  for (int round = 0; round < 2; ++round) {
    got.clear();
    auto r = conn.stream(
        get_head,
        {.on_head = [&](const client::http_response& h) { return ++heads > 0 && h.status == 200; },
         .on_data =
             [&](std::string_view d) {
               got.append(d);
               return got.size() < 6;  // all of ": hi\n\n": done
             }},
        10'000, 10'000);
    EXPECT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(got, ": hi\n\n");
  }
  EXPECT_EQ(heads, 2);
}

TEST(sync_connection, a_stream_that_goes_quiet_fails_with_timeout) {
  silent_peer peer("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n: hi\n\n");
  sync_connection conn(peer.ep());
  std::string got;
  auto r = conn.stream(get_head,
                       {.on_head = [](const client::http_response&) { return true; },
                        .on_data =
                            [&](std::string_view d) {
                              got.append(d);
                              return true;
                            }},
                       10'000, 100);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, "timeout");
  EXPECT_EQ(got, ": hi\n\n");
}

TEST(sync_connection, a_refused_connection_is_an_error_not_a_status) {
  client::endpoint ep;
  {
    silent_peer gone("");  // its port is free again once it is destroyed
    ep = gone.ep();
  }
  sync_connection conn(ep);
  auto r = conn.request(get_head, {}, 10'000);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status, 0);
  auto s = conn.stream(get_head,
                       {.on_head = [](const client::http_response&) { return true; },
                        .on_data = [](std::string_view) { return true; }},
                       10'000, 10'000);
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace weir::cli
