// The node-wide connection caps (admission): idle connections make way for new clients, a per-address
// cap answers 429, and running out of descriptors (EMFILE) never stops the listener for good.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "http/admission.h"
#include "http_test_support.h"

namespace weir::http {
namespace {

using testing::client;
using testing::eventually;
using testing::get;
using testing::response;
using testing::running_server;

void ok(const request&, exchange ex) {
  static constexpr header type[] = {{"Content-Type", "text/plain"}};
  ex.respond(200, type, "ok");
}

TEST(connection_limits, the_longest_idle_connection_makes_way_at_the_cap) {
  server_options o = testing::test_options();
  o.max_connections = 2;
  running_server s(o, ok);
  EXPECT_EQ(s.server().connection_cap(), 2u);
  client a(s.port());
  ASSERT_TRUE(eventually([&] { return s.server().stats().open_connections == 1; }));
  client b(s.port());
  ASSERT_TRUE(eventually([&] { return s.server().stats().open_connections == 2; }));
  // b is busy with a request it has not finished sending: not idle, so not the one to go.
  b.send("GET /slow HTTP/1.1\r\nHost: t\r\n");

  client c(s.port());
  c.send(get("/"));
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(a.wait_closed()) << "the idle connection was not closed";
  b.send("\r\n");
  ASSERT_TRUE(b.read_response(r));
  EXPECT_EQ(r.status, 200);
}

TEST(connection_limits, refuses_with_503_when_nothing_is_idle) {
  server_options o = testing::test_options();
  o.max_connections = 1;
  running_server s(o, ok);
  client a(s.port());
  a.send("GET / HTTP/1.1\r\n");  // half a head: in flight
  ASSERT_TRUE(eventually([&] { return s.server().stats().open_connections == 1; }));
  client b(s.port());
  response r;
  ASSERT_TRUE(b.read_response(r));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.header("Retry-After"), "1");
  EXPECT_EQ(r.body, "too many connections\r\n");
  EXPECT_EQ(s.server().stats().rejected, 1u);
}

TEST(connection_limits, one_address_cannot_hold_more_than_its_share) {
  server_options o = testing::test_options();
  o.max_connections_per_client = 2;
  running_server s(o, ok);
  client a(s.port()), b(s.port());
  ASSERT_TRUE(eventually([&] { return s.server().stats().open_connections == 2; }));
  client c(s.port());
  response r;
  ASSERT_TRUE(c.read_response(r));
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.body, "too many connections from this address\r\n");
  a.close();  // a slot of this address is free again
  ASSERT_TRUE(eventually([&] { return s.server().stats().open_connections == 1; }));
  client d(s.port());
  d.send(get("/"));
  ASSERT_TRUE(d.read_response(r));
  EXPECT_EQ(r.status, 200);
}

TEST(connection_limits, the_cap_leaves_a_reserve_of_descriptors) {
  EXPECT_EQ(connection_cap(1024, 256, 0), 768u);
  EXPECT_EQ(connection_cap(1024, 256, 100), 100u);
  EXPECT_EQ(connection_cap(1024, 256, 5000), 768u);  // a setting cannot eat the reserve
  EXPECT_EQ(connection_cap(100, 256, 0), 1u);
}

// A server in a child process whose descriptor limit (soft and hard) is tiny and whose reserve is 0, so
// that accept() itself fails with EMFILE. Before the fix the listener gave up on the first EMFILE: the
// waiting connections were never answered and, once the accept queue was full, no new edge ever came.
TEST(connection_limits, emfile_sheds_waiting_connections_and_accepting_resumes) {
  int ports[2];
  ASSERT_EQ(::pipe(ports), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ports[0]);
    rlimit rl{40, 40};
    if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) ::_exit(3);
    server_options o = testing::test_options();
    o.descriptor_reserve = 0;
    server srv(o, ok);
    if (!srv.start()) ::_exit(4);
    std::uint16_t port = srv.port();
    if (::write(ports[1], &port, sizeof port) != sizeof port) ::_exit(5);
    srv.run();
    ::_exit(0);
  }
  ::close(ports[1]);
  std::uint16_t port = 0;
  ASSERT_EQ(::read(ports[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  ::close(ports[0]);

  // Far more idle connections than the child has descriptors: the surplus must be answered 503 and
  // closed, not left hanging in the accept queue.
  std::vector<std::unique_ptr<client>> holders;
  for (int i = 0; i < 60; ++i) holders.push_back(std::make_unique<client>(port));
  int refused = 0;
  for (auto& h : holders) {
    if (h->wait_closed(std::chrono::milliseconds(200))) {
      if (h->buffer().find("503 Service Unavailable") != std::string::npos) ++refused;
    }
  }
  EXPECT_GT(refused, 0) << "no connection was shed while descriptors were exhausted";

  holders.clear();  // every descriptor of the child comes free
  bool served = false;
  for (int attempt = 0; attempt < 50 && !served; ++attempt) {
    client c(port);
    c.send(get("/"));
    response r;
    served = c.read_response(r) && r.status == 200;
  }
  EXPECT_TRUE(served) << "the listener never accepted again after EMFILE";
  ::kill(child, SIGKILL);
  int st = 0;
  ::waitpid(child, &st, 0);
}

}  // namespace
}  // namespace weir::http
