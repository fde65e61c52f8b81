// The RESP2 client of the saturation workload's Redis target: command encoding, reply framing, and one
// exchange with a loopback peer that answers like Redis.
#include "bench/resp_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "client/endpoint.h"

namespace weir::bench {
namespace {

TEST(resp_connection, commands_are_multi_bulk) {
  EXPECT_EQ(resp_command({"DEL", "s:1"}), "*2\r\n$3\r\nDEL\r\n$3\r\ns:1\r\n");
  EXPECT_EQ(resp_command({"XADD", "k", "*", "d", ""}),
            "*5\r\n$4\r\nXADD\r\n$1\r\nk\r\n$1\r\n*\r\n$1\r\nd\r\n$0\r\n\r\n");
}

TEST(resp_connection, a_reply_is_complete_only_with_its_last_byte) {
  bool err = false;
  EXPECT_EQ(resp_reply_length("$15\r\n1700000000000-0\r\n", err), 22);
  EXPECT_FALSE(err);
  EXPECT_EQ(resp_reply_length("$15\r\n1700000000000-0\r", err), 0);
  EXPECT_EQ(resp_reply_length("$15\r\n17", err), 0);
  EXPECT_EQ(resp_reply_length("$-1\r\n", err), 5);
  EXPECT_EQ(resp_reply_length(":1\r\n:2\r\n", err), 4);
  EXPECT_EQ(resp_reply_length("+OK\r\n", err), 5);
  EXPECT_EQ(resp_reply_length("-ERR wrong type\r\n", err), 17);
  EXPECT_TRUE(err);
  EXPECT_EQ(resp_reply_length("", err), 0);
  EXPECT_EQ(resp_reply_length("*1\r\n", err), -1);  // arrays: not a reply XADD or DEL gives
  EXPECT_EQ(resp_reply_length("$x\r\n", err), -1);
}

// A peer that reads one command of `expect` bytes and answers with `reply`, in two writes to exercise
// reassembly.
struct one_shot_peer {
  int listen_fd = -1;
  std::uint16_t port = 0;
  std::string received;
  std::thread t;
  one_shot_peer(std::size_t expect, std::string reply) {
    listen_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(listen_fd, 1), 0);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    t = std::thread([this, expect, reply] {
      const int fd = ::accept(listen_fd, nullptr, nullptr);
      char buf[4096];
      while (received.size() < expect) {
        const auto n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        received.append(buf, static_cast<std::size_t>(n));
      }
      const auto half = reply.size() / 2;
      [[maybe_unused]] auto w1 = ::write(fd, reply.data(), half);
      [[maybe_unused]] auto w2 = ::write(fd, reply.data() + half, reply.size() - half);
      char rest[16];
      while (::read(fd, rest, sizeof rest) > 0) {
      }
      ::close(fd);
    });
  }
  // What the peer read, once it is done (the client closed its connection).
  const std::string& finish() {
    if (t.joinable()) t.join();
    return received;
  }
  ~one_shot_peer() {
    finish();
    ::close(listen_fd);
  }
};

resp_reply exchange_with(one_shot_peer& peer, const std::string& command) {
  io::event_loop loop(0);
  auto ep = client::parse_endpoint("http://127.0.0.1:" + std::to_string(peer.port));
  EXPECT_TRUE(ep.has_value());
  resp_reply got;
  {
    resp_connection conn(loop, *ep);
    conn.send(command, [&](resp_reply& r) {
      got = r;
      loop.stop();
    });
    loop.run();
  }  // closing the connection ends the peer's read loop
  return got;
}

TEST(resp_connection, an_xadd_gets_its_bulk_reply) {
  const std::string cmd = resp_command({"XADD", "s:1", "*", "d", "payload"});
  one_shot_peer peer(cmd.size(), "$15\r\n1700000000000-0\r\n");
  const resp_reply r = exchange_with(peer, cmd);
  EXPECT_EQ(r.status, 200) << r.error;
  EXPECT_GE(r.done_ns, r.sent_ns);
  EXPECT_EQ(peer.finish(), cmd);
}

TEST(resp_connection, an_error_reply_is_status_500_with_its_text) {
  const std::string cmd = resp_command({"XADD", "s:1", "*", "d", "x"});
  one_shot_peer peer(cmd.size(), "-ERR wrong type\r\n");
  const resp_reply r = exchange_with(peer, cmd);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.error, "ERR wrong type");
}

}  // namespace
}  // namespace weir::bench
