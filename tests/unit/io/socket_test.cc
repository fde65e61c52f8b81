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

// The claim the server takes before binding: a second claim on the same address fails, and so does a
// claim on a port that something else (here a SO_REUSEPORT listener, as another weir would have) holds.
TEST(socket, a_claimed_address_cannot_be_claimed_twice) {
  auto probe = listen_tcp("127.0.0.1", 0);
  ASSERT_TRUE(probe);
  auto port = local_port(*probe);
  ASSERT_TRUE(port);
  ::close(*probe);  // now free (nothing listens)

  auto first = claim_listen_address("127.0.0.1", *port);
  ASSERT_TRUE(first) << first.err().reason;
  auto second = claim_listen_address("127.0.0.1", *port);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.err().as<socket_errc>(), socket_errc::in_use);
  EXPECT_NE(second.err().reason.find("another weir process"), std::string::npos) << second.err().reason;
  ::close(*first);
  auto again = claim_listen_address("127.0.0.1", *port);  // released with its descriptor
  ASSERT_TRUE(again) << again.err().reason;
  ::close(*again);
}

TEST(socket, a_claim_fails_where_a_reuseport_listener_already_listens) {
  auto other = listen_tcp("127.0.0.1", 0);  // SO_REUSEPORT: would let a second group member in
  ASSERT_TRUE(other);
  auto port = local_port(*other);
  ASSERT_TRUE(port);
  auto claim = claim_listen_address("127.0.0.1", *port);
  ASSERT_FALSE(claim);
  EXPECT_EQ(claim.err().as<socket_errc>(), socket_errc::in_use);
  EXPECT_NE(claim.err().reason.find("already in use"), std::string::npos) << claim.err().reason;
  ::close(*other);
}

TEST(socket, an_ephemeral_port_needs_no_claim) {
  auto claim = claim_listen_address("127.0.0.1", 0);
  ASSERT_TRUE(claim);
  EXPECT_EQ(*claim, -1);
}

TEST(socket, bad_address_is_an_error_value) {
  auto r = listen_tcp("not-an-ip", 0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().as<socket_errc>(), socket_errc::bad_address);
}

}  // namespace
}  // namespace weir::io
