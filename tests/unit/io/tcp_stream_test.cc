// io::tcp_stream against a plain listening socket on the same loop.
#include "io/tcp_stream.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "io/socket.h"

namespace weir::io {
namespace {

using namespace std::chrono_literals;

TEST(tcp_stream, connects_writes_reads_and_sees_hangup) {
  auto lfd = listen_tcp("127.0.0.1", 0);
  ASSERT_TRUE(lfd);
  auto port = local_port(*lfd);
  ASSERT_TRUE(port);
  event_loop loop(0);
  std::unique_ptr<tcp_stream> s;
  int peer = -1;
  std::string got;
  bool connected = false, hangup = false;
  auto r = tcp_stream::connect(loop, *port,
                               {.on_connected =
                                    [&](int err) {
                                      connected = err == 0;
                                      EXPECT_EQ(s->write("ping"), 4);
                                      // The server side: accept (blocking listener in non-blocking mode:
                                      // the connection is complete, so accept succeeds), echo, close.
                                      peer = ::accept4(*lfd, nullptr, nullptr, 0);
                                      ASSERT_GE(peer, 0);
                                      char buf[16];
                                      auto n = ::recv(peer, buf, sizeof buf, 0);
                                      ASSERT_EQ(n, 4);
                                      ::send(peer, "pong", 4, 0);
                                      ::close(peer);
                                    },
                                .on_readable =
                                    [&] {
                                      char buf[64];
                                      for (;;) {
                                        auto n = s->read(buf, sizeof buf);
                                        if (n > 0) {
                                          got.append(buf, static_cast<std::size_t>(n));
                                          continue;
                                        }
                                        if (n == 0) {
                                          hangup = true;
                                          s->close();
                                          loop.stop();
                                        }
                                        break;
                                      }
                                    },
                                .on_hangup = [&] { hangup = true; }});
  ASSERT_TRUE(r);
  s = std::move(*r);
  loop.add_timer(5000ms, [&] { loop.stop(); });  // bound the test
  loop.run();
  EXPECT_TRUE(connected);
  EXPECT_EQ(got, "pong");
  EXPECT_TRUE(hangup);
  ::close(*lfd);
}

TEST(tcp_stream, refused_connect_reports_an_error) {
  auto lfd = listen_tcp("127.0.0.1", 0);
  ASSERT_TRUE(lfd);
  auto port = *local_port(*lfd);
  ::close(*lfd);  // nobody listens there now
  event_loop loop(0);
  int error = -1;
  auto r = tcp_stream::connect(loop, port, {.on_connected = [&](int err) {
                                 error = err;
                                 loop.stop();
                               }});
  if (!r) {
    // Loopback may refuse at once instead of completing the connect asynchronously.
    EXPECT_NE(r.err().reason.find("refused"), std::string::npos) << r.err().reason;
    return;
  }
  auto s = std::move(*r);
  loop.add_timer(5000ms, [&] { loop.stop(); });
  loop.run();
  EXPECT_EQ(error, ECONNREFUSED);
  EXPECT_FALSE(s->open());
}

}  // namespace
}  // namespace weir::io
