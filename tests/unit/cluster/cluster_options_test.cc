#include "cluster/cluster_options.h"

#include <gtest/gtest.h>

#include <string>

namespace weir::cluster {
namespace {

// The reason of a failed parse_peers, or "" if it succeeded.
std::string peers_error(std::string_view text) {
  auto r = parse_peers(text);
  return r ? "" : r.err().reason;
}

std::string validate_error(const cluster_options& o) {
  auto st = validate(o);
  return st ? "" : st.err().reason;
}

cluster_options three_nodes(std::uint64_t self = 2) {
  cluster_options o;
  o.node_id = self;
  o.peer_listen = {"127.0.0.1", static_cast<std::uint16_t>(5436 + self)};
  o.peers = *parse_peers("1=127.0.0.1:5437,2=127.0.0.1:5438,3=127.0.0.1:5439");
  return o;
}

TEST(cluster_options, parse_peers_reads_every_entry) {
  auto p = parse_peers("1=127.0.0.1:5437,2=10.0.0.2:5438, 3 = localhost:5439 ");
  ASSERT_TRUE(p) << p.err().reason;
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ(p->at(1), (peer_address{"127.0.0.1", 5437}));
  EXPECT_EQ(p->at(2), (peer_address{"10.0.0.2", 5438}));
  EXPECT_EQ(p->at(3), (peer_address{"localhost", 5439}));
  EXPECT_EQ(format_peers(*p), "1=127.0.0.1:5437,2=10.0.0.2:5438,3=localhost:5439");
  auto again = parse_peers(format_peers(*p));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *p);
}

TEST(cluster_options, no_peers_is_the_empty_text) {
  for (const char* text : {"", " "}) {
    auto p = parse_peers(text);
    ASSERT_TRUE(p) << text;
    EXPECT_TRUE(p->empty());
  }
  EXPECT_EQ(format_peers({}), "");
}

TEST(cluster_options, parse_peers_errors_name_the_bad_entry) {
  EXPECT_NE(peers_error("1=127.0.0.1:5437,x=127.0.0.1:1").find("bad node id 'x'"), std::string::npos);
  EXPECT_NE(peers_error("0=127.0.0.1:5437").find("bad node id '0'"), std::string::npos);
  EXPECT_NE(peers_error("-1=127.0.0.1:5437").find("bad node id '-1'"), std::string::npos);
  EXPECT_NE(peers_error("=127.0.0.1:5437").find("bad node id ''"), std::string::npos);
  EXPECT_NE(peers_error("99999999999999999999=h:1").find("bad node id"), std::string::npos);
  EXPECT_NE(peers_error("1=127.0.0.1:5437,1=127.0.0.1:5438").find("node 1 is listed twice"),
            std::string::npos);
  EXPECT_NE(peers_error("1=127.0.0.1:5437,2=127.0.0.1").find("node 2: expected HOST:PORT"),
            std::string::npos);
  EXPECT_NE(peers_error("2=127.0.0.1:99999").find("node 2: bad port"), std::string::npos);
  EXPECT_NE(peers_error("2=127.0.0.1:").find("node 2: bad port"), std::string::npos);
  EXPECT_NE(peers_error("2=").find("node 2: no HOST:PORT"), std::string::npos);
  EXPECT_NE(peers_error("127.0.0.1:5437").find("'127.0.0.1:5437' is not ID=HOST:PORT"), std::string::npos);
  EXPECT_NE(peers_error("1=127.0.0.1:5437,").find("empty entry"), std::string::npos);
  EXPECT_NE(peers_error("1=127.0.0.1:5437,,2=127.0.0.1:5438").find("empty entry"), std::string::npos);
  EXPECT_NE(peers_error("1=a b:5437").find("node 1: expected HOST:PORT"), std::string::npos);
  EXPECT_NE(peers_error("1=a=b:5437").find("node 1: expected HOST:PORT"), std::string::npos);
}

TEST(cluster_options, peer_address_round_trips) {
  auto a = parse_peer_address("0.0.0.0:5437");
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, (peer_address{"0.0.0.0", 5437}));
  EXPECT_EQ(format_peer_address(*a), "0.0.0.0:5437");
  auto none = parse_peer_address("");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(format_peer_address({}), "");
  EXPECT_FALSE(parse_peer_address("5437"));
  EXPECT_FALSE(parse_peer_address(":5437"));
}

TEST(cluster_options, a_complete_configuration_is_valid) {
  EXPECT_EQ(validate_error(three_nodes(1)), "");
  EXPECT_EQ(validate_error(three_nodes(3)), "");
  cluster_options any_interface = three_nodes();
  any_interface.peer_listen = {"0.0.0.0", 5438};
  EXPECT_EQ(validate_error(any_interface), "");
  cluster_options one = three_nodes(1);
  one.peers.erase(2);
  one.peers.erase(3);
  EXPECT_EQ(validate_error(one), "");  // a cluster of one node (it can grow later only by a new cluster)
}

TEST(cluster_options, alone_is_valid_only_without_peers) {
  EXPECT_EQ(validate_error(cluster_options{}), "");
  cluster_options o = three_nodes();
  o.node_id = 0;
  EXPECT_EQ(validate_error(o).rfind("peers: set without node-id; add --node-id N", 0), 0u)
      << validate_error(o);
  o.peers.clear();
  EXPECT_EQ(validate_error(o).rfind("peer-listen: set without node-id; add --node-id N", 0), 0u);
}

TEST(cluster_options, validate_names_what_is_wrong) {
  cluster_options o = three_nodes();
  o.peers.clear();
  EXPECT_EQ(validate_error(o), "peers: required with node-id");

  o = three_nodes();
  o.peer_listen = {};
  EXPECT_EQ(validate_error(o), "peer-listen: required with node-id");

  o = three_nodes(4);
  o.peer_listen = {"127.0.0.1", 5440};
  EXPECT_EQ(validate_error(o), "node-id 4 is not one of the peers (1, 2, 3)");

  o = three_nodes();
  for (std::uint64_t id = 4; id <= 8; ++id)
    o.peers[id] = {"127.0.0.1", static_cast<std::uint16_t>(6000 + id)};
  EXPECT_EQ(validate_error(o), "peers: at most 7 nodes, got 8");

  o = three_nodes();
  o.peers[3].port = 0;
  EXPECT_EQ(validate_error(o), "peers: node 3 (127.0.0.1:0): port 0");

  o = three_nodes();
  o.peers[3].host = "node3.example";
  EXPECT_NE(validate_error(o).find("node 3 (node3.example:5439): an IPv4 address"), std::string::npos);

  o = three_nodes();
  o.peers[3] = o.peers[1];
  EXPECT_EQ(validate_error(o), "peers: node 3 (127.0.0.1:5437): the address of node 1 too");

  o = three_nodes();
  o.peer_listen.port = 0;
  EXPECT_NE(validate_error(o).find("peer-listen: port 0"), std::string::npos);

  o = three_nodes();
  o.peer_listen.host = "::1";
  EXPECT_NE(validate_error(o).find("peer-listen: an IPv4 address"), std::string::npos);

  o = three_nodes(2);
  o.peer_listen = {"127.0.0.1", 5437};  // node 1's address: node-id copied from node 1's config
  EXPECT_EQ(validate_error(o),
            "peer-listen 127.0.0.1:5437 is the address of node 1 in peers, not of node 2 "
            "(is node-id right?)");

  for (std::uint32_t g : {0u, max_groups + 1}) {
    o = three_nodes();
    o.groups = g;
    EXPECT_EQ(validate_error(o).rfind("raft-groups: between 1 and 4096", 0), 0u) << g;
  }
  o = three_nodes();
  o.groups = max_groups;
  EXPECT_EQ(validate_error(o), "");
  for (std::uint32_t lanes : {0u, max_lanes + 1}) {
    o = three_nodes();
    o.lanes = lanes;
    EXPECT_EQ(validate_error(o).rfind("raft-lanes: between 1 and 64", 0), 0u) << lanes;
  }
  o = three_nodes();
  o.groups = 4;
  o.lanes = 5;  // a lane without a group
  EXPECT_EQ(validate_error(o).rfind("raft-lanes: between 1 and 4 ", 0), 0u) << validate_error(o);
  o.lanes = 4;
  EXPECT_EQ(validate_error(o), "");

  for (std::uint32_t ms : {0u, min_election_timeout_ms - 1, max_election_timeout_ms + 1}) {
    o = three_nodes();
    o.election_timeout_ms = ms;
    EXPECT_EQ(
        validate_error(o).rfind("election-timeout-ms: between 200 and 60000, got " + std::to_string(ms), 0),
        0u)
        << ms;
  }
  for (std::uint32_t ms : {min_election_timeout_ms, max_election_timeout_ms}) {
    o = three_nodes();
    o.election_timeout_ms = ms;
    EXPECT_EQ(validate_error(o), "") << ms;
  }
  EXPECT_EQ(cluster_options{}.election_timeout_ms, 1000u);
  EXPECT_EQ(cluster_options{}.heartbeat_ms(), 100u);
}

}  // namespace
}  // namespace weir::cluster
