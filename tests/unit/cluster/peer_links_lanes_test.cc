// Core lanes (cluster/peer_links.h, "Core lanes"): a node runs one peer_links per core lane; core lane 0
// accepts every lane's connections on the node's one peer port and hands those whose hello names
// another core lane to that lane's peer_links, which adopts them. Frames sent by a peer's core lane l
// arrive at this node's core lane l only, on both link lanes, whole and in order, including bytes that
// came in the same segment as the hello; with TLS too.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "peer_links_support.h"

namespace weir::cluster {
namespace {

using namespace peer_links_testing;

TEST(peer_links_lanes, each_core_lane_has_its_own_connections_through_one_port) {
  laned_cluster c;
  EXPECT_EQ(c.lt.call([&] { return c.links(1, 1).listen_port(); }), 0u) << "only core lane 0 listens";
  EXPECT_EQ(c.lt.call([&] { return c.links(1, 0).listen_port(); }), c.port(1));
  constexpr int n = 50;
  c.lt.call([&] {
    for (int i = 0; i < n; ++i) {
      for (std::uint32_t core = 0; core < core_lanes; ++core) {
        const auto ch = static_cast<std::uint8_t>(core + 1);
        c.links(1, core).send(2, ch, bytes(fmt::format("1-2-{}-{}", ch, i)));
        c.links(2, core).send(1, ch, bytes(fmt::format("2-1-{}-{}", ch, i)));
        c.links(1, core).send_urgent(2, 9, bytes(fmt::format("1-2-9-{}", i)));
      }
    }
    return 0;
  });
  ASSERT_TRUE(c.lt.wait_for([&] {
    return c.got(2, 0).size() == 2 * n && c.got(2, 1).size() == 2 * n && c.got(1, 0).size() == n &&
           c.got(1, 1).size() == n;
  })) << "every frame arrives at its core lane";
  for (std::uint32_t core = 0; core < core_lanes; ++core) {
    auto got = c.lt.call([&] { return c.got(2, core); });
    std::vector<message> bulk, urgent;
    for (auto& m : got) (m.channel == 9 ? urgent : bulk).push_back(m);
    for (auto& m : bulk) EXPECT_EQ(m.channel, core + 1) << "lane " << core << " got another lane's frame";
    expect_in_order(bulk, 2, n);
    expect_in_order(urgent, 2, n);
    expect_in_order(c.lt.call([&] { return c.got(1, core); }), 1, n);
  }
  // Both link lanes of core lane 1, both ways, went through core lane 0's acceptor.
  EXPECT_EQ(c.lt.call([&] { return c.handed(1); }), 2);
  EXPECT_EQ(c.lt.call([&] { return c.handed(2); }), 2);
  for (std::uint32_t core = 0; core < core_lanes; ++core) {
    const auto s = c.lt.call([&] { return c.links(1, core).status(); });
    ASSERT_EQ(s.size(), 1u);
    EXPECT_TRUE(s[0].out_connected && s[0].in_connected) << "core lane " << core;
  }
}

// The bytes that follow a hello in the same segment travel with the handed connection; a hello naming a
// core lane the node lacks, another count of core lanes, or a node that is no peer of the adopting lane,
// is closed.
TEST(peer_links_lanes, a_handed_connection_keeps_what_came_with_its_hello) {
  laned_cluster c;
  {
    raw_client r(c.port(1));
    r.send(hello(2, 4, 1u << 16 | 0, 2) + frame(5, "with the hello") + frame(5, "after"));
    ASSERT_TRUE(c.lt.wait_for([&] { return c.got(1, 1).size() >= 2; }));
  }
  auto got = c.lt.call([&] { return c.got(1, 1); });
  std::vector<std::string> texts;
  for (auto& m : got)
    if (m.channel == 5) texts.push_back(m.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"with the hello", "after"}));
  {
    raw_client r(c.port(1));
    r.send(hello(2, 4, 2u << 16, 2));  // core lane 2 of 2
    EXPECT_TRUE(r.closed_by_node());
  }
  {
    raw_client r(c.port(1));
    r.send(hello(7, 4, 1u << 16, 2));  // no peer of core lane 1
    EXPECT_TRUE(r.closed_by_node());
  }
  {
    raw_client r(c.port(1));
    r.send(hello(2, 4, 1u << 16, 1));  // a node of one lane: another count than this node's
    EXPECT_TRUE(r.closed_by_node());
  }
}

}  // namespace
}  // namespace weir::cluster
