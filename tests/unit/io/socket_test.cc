#include "io/socket.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace weir::io {
namespace {

TEST(socket, parse_host_port) {
  auto hp = parse_host_port("127.0.0.1:8080");
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 8080);
  EXPECT_FALSE(parse_host_port("127.0.0.1"));
  EXPECT_FALSE(parse_host_port("127.0.0.1:99999"));
  EXPECT_FALSE(parse_host_port("127.0.0.1:http"));
  EXPECT_FALSE(parse_host_port(":80"));
}

TEST(socket, two_listeners_share_a_port_with_reuseport) {
  auto a = listen_tcp("127.0.0.1", 0);
  ASSERT_TRUE(a);
  auto port = local_port(*a);
  ASSERT_TRUE(port);
  EXPECT_NE(*port, 0);
  auto b = listen_tcp("127.0.0.1", *port);
  ASSERT_TRUE(b);
  ::close(*a);
  ::close(*b);
}

TEST(socket, bad_address_is_an_error_value) {
  auto r = listen_tcp("not-an-ip", 0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().as<socket_errc>(), socket_errc::bad_address);
}

}  // namespace
}  // namespace weir::io
