// peer_links with an incarnation book (docs/replication.md, "A node that lost its data directory"): a
// peer's first incarnation is recorded, the same one is accepted again, another one is refused with a
// refusal the dialer reads, and a removed peer is forgotten.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "cluster/incarnation_book.h"
#include "cluster/peer_hello.h"
#include "peer_links_support.h"
#include "storage/mem_env.h"

namespace weir::cluster::peer_links_testing {
namespace {

struct booked_cluster {
  booked_cluster() : c(2) {
    EXPECT_TRUE(env.create_dirs("/data/node-1"));
    auto b = incarnation_book::open(env, "/data/node-1");
    EXPECT_TRUE(b);
    book = std::make_shared<incarnation_book>(std::move(*b));
  }
  // Node 1 judges hellos with the book; node 2 says it is incarnation `inc` and collects refusals.
  void start_1() {
    auto o = c.options(1);
    o.incarnation = 11;
    o.book = book;
    c.start(std::move(o));
  }
  void start_2(std::uint64_t inc) {
    auto o = c.options(2);
    o.incarnation = inc;
    c.start(std::move(o));
    c.lt.call([&] {
      c.links(2).set_refusal_handler([this](const peer_refusal& r) { refusals.push_back(r); });
      return 0;
    });
  }
  std::map<std::uint64_t, std::uint64_t> entries() {
    return c.lt.call([&] { return book->entries(); });
  }

  storage::mem_env env;
  std::shared_ptr<incarnation_book> book;
  cluster c;
  std::vector<peer_refusal> refusals;  // loop thread
};

TEST(peer_links_incarnation, a_peer_back_with_another_incarnation_is_refused_and_told_why) {
  booked_cluster b;
  b.start_1();
  b.start_2(22);
  b.c.send(2, 1, 1, "first");
  ASSERT_TRUE(b.c.wait_received(1, 1));
  EXPECT_EQ(b.entries(), (std::map<std::uint64_t, std::uint64_t>{{2, 22}}));

  // Node 2 again, on its own directory: accepted.
  b.c.stop(2);
  b.start_2(22);
  b.c.send(2, 1, 1, "after a restart");
  ASSERT_TRUE(b.c.wait_received(1, 2));

  // Node 2 on a new directory: refused, and it reads why.
  b.c.stop(2);
  b.start_2(23);
  b.c.send(2, 1, 1, "from a new directory");
  ASSERT_TRUE(b.c.lt.wait_for([&] { return !b.refusals.empty(); }));
  const peer_refusal r = b.c.lt.call([&] { return b.refusals.front(); });
  EXPECT_EQ(r.refused_by, 1u);
  EXPECT_EQ(r.remembered, 22u);
  EXPECT_EQ(r.presented, 23u);
  EXPECT_NE(r.text.find("node 2 came back with a different data directory"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("DELETE /cluster/members?id=2"), std::string::npos) << r.text;
  // Nothing it sent was delivered, and the book still names the old directory.
  EXPECT_EQ(b.c.received(1).size(), 2u);
  EXPECT_EQ(b.entries(), (std::map<std::uint64_t, std::uint64_t>{{2, 22}}));
  EXPECT_FALSE(b.c.status(2, 1).out_connected);
}

// A raw dialer sees the refusal on the wire, then the end of the connection; the frame it sent after its
// hello is not delivered.
TEST(peer_links_incarnation, the_refusal_is_written_before_the_connection_closes) {
  booked_cluster b;
  ASSERT_EQ(*b.book->judge(2, 22), incarnation_book::verdict::recorded);  // before the loop uses it
  b.start_1();
  auto fd = io::connect_tcp("127.0.0.1", b.c.port(1), /*non_blocking=*/false);
  ASSERT_TRUE(fd);
  timeval tv{3, 0};
  ::setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::string h = hello(2, 4, 0, 1, /*incarnation=*/99) + frame(1, "not delivered");
  ASSERT_EQ(::send(*fd, h.data(), h.size(), MSG_NOSIGNAL), ssize_t(h.size()));
  std::vector<std::byte> got;
  for (;;) {
    std::byte buf[512];
    auto n = ::recv(*fd, buf, sizeof buf, 0);
    if (n <= 0) break;  // the end (or the 3 s timeout: then the refusal below is missing)
    got.insert(got.end(), buf, buf + n);
  }
  ::close(*fd);
  auto r = decode_refusal(got);
  ASSERT_TRUE(r) << r.err().reason;
  ASSERT_TRUE(r->refusal);
  EXPECT_EQ(r->consumed, got.size());
  EXPECT_EQ(r->refusal->remembered, 22u);
  EXPECT_EQ(r->refusal->presented, 99u);
  EXPECT_TRUE(b.c.received(1).empty());
}

// A member removed through the membership API (remove_peer) is forgotten: added again, the same id on a
// new directory is accepted and its new incarnation recorded.
TEST(peer_links_incarnation, a_removed_peer_may_come_back_with_another_incarnation) {
  booked_cluster b;
  b.start_1();
  b.start_2(22);
  b.c.send(2, 1, 1, "first");
  ASSERT_TRUE(b.c.wait_received(1, 1));
  b.c.stop(2);
  b.c.lt.call([&] {
    b.c.links(1).remove_peer(2);
    return 0;
  });
  EXPECT_TRUE(b.entries().empty());
  b.c.lt.call([&] {
    EXPECT_TRUE(b.c.links(1).add_peer(2, "127.0.0.1:" + std::to_string(b.c.port(2))));
    return 0;
  });
  b.start_2(23);
  b.c.send(2, 1, 1, "from the new directory");
  ASSERT_TRUE(b.c.wait_received(1, 2));
  EXPECT_EQ(b.c.received(1)[1].text, "from the new directory");
  EXPECT_EQ(b.entries(), (std::map<std::uint64_t, std::uint64_t>{{2, 23}}));
  EXPECT_TRUE(b.c.lt.call([&] { return b.refusals.empty(); }));
}

// The replicator forgets a removed member's incarnation as soon as it adopts the membership without it,
// while the link may stay for the farewell: the id is then new to the book even if it is still a peer.
TEST(peer_links_incarnation, a_forgotten_incarnation_is_recorded_anew) {
  booked_cluster b;
  b.start_1();
  b.start_2(22);
  b.c.send(2, 1, 1, "first");
  ASSERT_TRUE(b.c.wait_received(1, 1));
  b.c.stop(2);
  b.c.lt.call([&] {
    b.c.links(1).forget_incarnation(2);
    b.c.links(1).forget_incarnation(5);  // never seen: nothing
    return 0;
  });
  EXPECT_TRUE(b.entries().empty());
  b.start_2(23);
  b.c.send(2, 1, 1, "second");
  ASSERT_TRUE(b.c.wait_received(1, 2));
  EXPECT_EQ(b.entries(), (std::map<std::uint64_t, std::uint64_t>{{2, 23}}));
}

}  // namespace
}  // namespace weir::cluster::peer_links_testing
