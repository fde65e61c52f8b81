// cluster::peer_links on a real event loop (its own thread) over 127.0.0.1. Node ports are reserved up
// front (bound, not listening) because every node must know every other node's port when it opens.
#include "cluster/peer_links.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "unit/cluster/peer_links_support.h"

namespace weir::cluster {
namespace {

using namespace peer_links_testing;

TEST(peer_links, two_nodes_exchange_frames_in_order_on_both_channels) {
  cluster c(2);
  c.start(1);
  c.start(2);
  constexpr int per_stream = 200;
  c.lt.call([&] {
    for (int i = 0; i < per_stream; ++i) {
      for (std::uint8_t ch : {0, 1}) {
        for (auto [from, to] : {std::pair{1, 2}, std::pair{2, 1}}) {
          c.links(from).send(to, ch, bytes(fmt::format("{}-{}-{}-{}", from, to, ch, i)));
        }
      }
    }
    return 0;
  });
  ASSERT_TRUE(c.wait_received(1, 2 * per_stream));
  ASSERT_TRUE(c.wait_received(2, 2 * per_stream));
  expect_in_order(c.received(1), 1, per_stream);
  expect_in_order(c.received(2), 2, per_stream);
  auto s = c.status(1, 2);
  EXPECT_EQ(s.peer, 2u);
  EXPECT_TRUE(s.out_connected);
  EXPECT_TRUE(s.in_connected);
  EXPECT_EQ(s.connects, peer_links::lane_count);  // one connection per lane
  EXPECT_EQ(s.drops, 0u);
  EXPECT_EQ(s.dropped_frames, 0u);
  EXPECT_GT(s.bytes_sent, 2u * per_stream * peer_links::header_size);
  EXPECT_GT(s.bytes_received, 2u * per_stream * peer_links::header_size);
  EXPECT_EQ(c.lt.call([&] { return c.links(1).status().size(); }), 1u);  // self is not a link
}

TEST(peer_links, three_nodes_all_pairs) {
  cluster c(3);
  for (int id = 1; id <= 3; ++id) c.start(id);
  constexpr int per_stream = 50;
  c.lt.call([&] {
    for (int i = 0; i < per_stream; ++i) {
      for (std::uint64_t from = 1; from <= 3; ++from) {
        for (std::uint64_t to = 1; to <= 3; ++to) {
          if (from == to) continue;
          for (std::uint8_t ch : {0, 1})
            c.links(from).send(to, ch, bytes(fmt::format("{}-{}-{}-{}", from, to, ch, i)));
        }
      }
    }
    return 0;
  });
  for (int id = 1; id <= 3; ++id) {
    ASSERT_TRUE(c.wait_received(id, 4 * per_stream)) << "node " << id;
    expect_in_order(c.received(id), id, per_stream);
  }
  auto st = c.lt.call([&] { return c.links(2).status(); });
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].peer, 1u);
  EXPECT_EQ(st[1].peer, 3u);
}

TEST(peer_links, a_large_payload_arrives_whole) {
  cluster c(2);
  c.start(1);
  c.start(2);
  std::string big(8u << 20, '\0');
  std::uint32_t x = 12345;
  for (auto& ch : big) {
    x = x * 1103515245u + 12345u;
    ch = static_cast<char>(x >> 24);
  }
  c.send(1, 2, 1, "before");
  c.send(1, 2, 1, big);
  c.send(1, 2, 1, "after");
  ASSERT_TRUE(c.wait_received(2, 3));
  auto got = c.received(2);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].text, "before");
  EXPECT_TRUE(got[1].text == big) << "8 MiB payload differs (size " << got[1].text.size() << ")";
  EXPECT_EQ(got[2].text, "after");
}

// A peer that sends more than options::read_budget is read a budget at a time, the rest on later turns of
// the loop: a node whose peers keep its socket full still runs its timers and sends its own frames (raft
// heartbeats) between reads. The frames still arrive whole and in order.
TEST(peer_links, a_peer_sending_megabytes_is_read_a_budget_per_turn) {
  cluster c(2);
  c.start(1);
  auto o = c.options(2);
  o.read_budget = 4096;
  c.start(o);
  constexpr int frames = 32;
  const std::string filler(64u << 10, 'x');
  // A task that runs once per turn of the loop, and the turn each frame arrived in.
  auto turns = std::make_shared<std::uint64_t>(0);
  auto alive = std::make_shared<bool>(true);
  std::function<void()> count = [&c, turns, alive, &count] {
    if (!*alive) return;
    ++*turns;
    c.lt.loop.post(count);
  };
  std::vector<std::uint64_t> arrived;
  c.lt.call([&] {
    c.links(2).set_receiver([&](std::uint64_t, std::uint8_t, std::span<const std::byte> p) {
      c.got(2).push_back({1, 1, text(p)});
      arrived.push_back(*turns);
    });
    c.lt.loop.post(count);
    for (int i = 0; i < frames; ++i) c.links(1).send(2, 1, bytes(fmt::format("1-2-1-{}|{}", i, filler)));
    return 0;
  });
  ASSERT_TRUE(c.wait_received(2, frames));
  auto got = c.received(2);
  for (int i = 0; i < frames; ++i)
    EXPECT_EQ(got[static_cast<std::size_t>(i)].text, fmt::format("1-2-1-{}|{}", i, filler));
  const auto [yields, first, last] = c.lt.call([&] {
    *alive = false;
    return std::tuple{c.links(2).read_yields(), arrived.front(), arrived.back()};
  });
  EXPECT_GE(yields, (frames * filler.size()) / (4u * 4096));  // 2 MiB read 4 KiB at a time, mostly
  EXPECT_GT(last, first);                                     // the loop turned between the frames
  EXPECT_EQ(c.status(2, 1).read_yields, yields);
}

TEST(peer_links, a_peer_that_starts_later_gets_the_queued_frames) {
  cluster c(2);
  c.start(1);
  for (int i = 0; i < 10; ++i) c.send(1, 2, 1, fmt::format("1-2-1-{}", i));
  EXPECT_FALSE(c.status(1, 2).out_connected);  // node 2 is not listening yet
  c.start(2);
  ASSERT_TRUE(c.wait_received(2, 10));
  expect_in_order(c.received(2), 2, 10);
  EXPECT_EQ(c.status(1, 2).dropped_frames, 0u);
}

TEST(peer_links, frames_beyond_max_pending_bytes_are_dropped) {
  cluster c(2);
  auto o = c.options(1);
  o.max_pending_bytes = 1000;  // 9 frames of 100 + 9 bytes
  c.start(std::move(o));
  for (int i = 0; i < 20; ++i) c.send(1, 2, 1, fmt::format("{:03}", i) + std::string(97, 'x'));
  EXPECT_EQ(c.status(1, 2).dropped_frames, 11u);
  c.start(2);
  ASSERT_TRUE(c.wait_received(2, 9));
  c.send(1, 2, 1, "last");  // the queue has room again
  ASSERT_TRUE(c.wait_received(2, 10));
  auto got = c.received(2);
  ASSERT_EQ(got.size(), 10u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(got[i].text.substr(0, 3), fmt::format("{:03}", i));
  EXPECT_EQ(got[9].text, "last");
}

TEST(peer_links, a_restarted_peer_gets_new_frames) {
  cluster c(2);
  c.start(1);
  c.start(2);
  c.send(1, 2, 1, "one");
  c.send(2, 1, 1, "two");
  ASSERT_TRUE(c.wait_received(2, 1));
  ASSERT_TRUE(c.wait_received(1, 1));
  c.stop(2);
  ASSERT_TRUE(c.lt.wait_for([&] {
    auto s = c.links(1).status()[0];
    return !s.out_connected && !s.in_connected;
  }));
  c.send(1, 2, 1, "queued while 2 was down");
  c.start(2);  // same port
  c.send(1, 2, 1, "after the restart");
  c.send(2, 1, 1, "back");
  ASSERT_TRUE(c.wait_received(2, 2));
  ASSERT_TRUE(c.wait_received(1, 2));
  auto got2 = c.received(2);
  EXPECT_EQ(got2[0].text, "queued while 2 was down");
  EXPECT_EQ(got2[1].text, "after the restart");
  EXPECT_EQ(c.received(1)[1].text, "back");
  auto s = c.status(1, 2);
  EXPECT_EQ(s.connects, 2u * peer_links::lane_count);
  EXPECT_EQ(s.drops, 1u * peer_links::lane_count);
  EXPECT_TRUE(s.in_connected);
}

TEST(peer_links, bad_connections_are_closed) {
  cluster c(2);
  c.start(1);
  auto port = c.port(1);
  {
    raw_client r(port);
    r.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_TRUE(r.closed_by_node());
  }
  {
    raw_client r(port);
    r.send(hello(99));  // not a node of the cluster
    EXPECT_TRUE(r.closed_by_node());
  }
  {
    raw_client r(port);
    r.send(hello(1));  // the node itself
    EXPECT_TRUE(r.closed_by_node());
  }
  {
    raw_client r(port);
    r.send(hello(2, /*version=*/1));  // a node of an older version: no lane in its hello
    EXPECT_TRUE(r.closed_by_node());
  }
  {
    raw_client r(port);
    r.send(hello(2, /*version=*/4, /*lane=*/2));  // no such lane
    EXPECT_TRUE(r.closed_by_node());
  }
  {
    raw_client r(port);
    r.send(hello(2, /*version=*/4, /*lane=*/1u << 16));  // core lane 1: this node has core lane 0 only
    EXPECT_TRUE(r.closed_by_node());
  }
  {
    raw_client r(port);
    // A node of two lanes: not this one's count.
    r.send(hello(2, /*version=*/4, /*lane=*/0, /*core_lanes=*/2));
    EXPECT_TRUE(r.closed_by_node());
  }
  {
    raw_client r(port);
    r.send(hello(2) + frame(1, "fine") + frame(1, "corrupt", /*bad_crc=*/true));
    EXPECT_TRUE(r.closed_by_node());
  }
  {
    raw_client r(port);
    std::string huge;
    put_le(huge, peer_links::max_payload + 1, 4);
    huge.append(5, '\0');
    r.send(hello(2) + huge);
    EXPECT_TRUE(r.closed_by_node());
  }
  // What came before the bad frame was delivered, from node 2.
  ASSERT_TRUE(c.wait_received(1, 1));
  auto got = c.received(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].from, 2u);
  EXPECT_EQ(got[0].text, "fine");
  EXPECT_FALSE(c.status(1, 2).in_connected);
  // The node still serves its real peer.
  c.start(2);
  c.send(2, 1, 1, "real");
  ASSERT_TRUE(c.wait_received(1, 2));
  EXPECT_EQ(c.received(1)[1].text, "real");
}

// A hello from a node that is not a peer is refused, and its id goes to the stranger handler (at the end
// of the loop turn): the replicator tells a node it removed that it left. Its own id, or a bad hello, is
// no stranger.
TEST(peer_links, a_node_that_is_no_peer_goes_to_the_stranger_handler) {
  cluster c(2);
  c.start(1);
  std::vector<std::uint64_t> strangers;  // loop thread
  c.lt.call([&] {
    c.links(1).set_stranger_handler([&](std::uint64_t id) { strangers.push_back(id); });
    return 0;
  });
  for (const std::string& h : {hello(1), hello(7, /*version=*/2), hello(99)}) {
    raw_client r(c.port(1));
    r.send(h);
    EXPECT_TRUE(r.closed_by_node());
  }
  ASSERT_TRUE(c.lt.wait_for([&] { return !strangers.empty(); }));
  EXPECT_EQ(c.lt.call([&] { return strangers; }), std::vector<std::uint64_t>{99});
  c.lt.call([&] {
    c.links(1).set_stranger_handler(nullptr);
    return 0;
  });
}

TEST(peer_links, a_new_connection_from_a_peer_replaces_the_old_one) {
  cluster c(2);
  c.start(1);
  c.start(2);
  c.send(2, 1, 1, "from the real node 2");
  ASSERT_TRUE(c.wait_received(1, 1));
  {
    raw_client r(c.port(1));  // node 2 "restarted": its new connection wins
    r.send(hello(2) + frame(1, "from the new connection"));
    ASSERT_TRUE(c.wait_received(1, 2));
    EXPECT_EQ(c.received(1)[1].text, "from the new connection");
    EXPECT_TRUE(c.status(1, 2).in_connected);
  }
  // The real node 2 saw its connection closed; it redials and gets through again.
  ASSERT_TRUE(c.lt.wait_for([&] {
    return c.links(2).status()[0].connects > peer_links::lane_count && c.links(2).status()[0].out_connected;
  }));
  c.send(2, 1, 1, "redialled");
  ASSERT_TRUE(c.wait_received(1, 3));
  EXPECT_EQ(c.received(1)[2].text, "redialled");
}

TEST(peer_links, raft_transport_carries_channel_0) {
  cluster c(2);
  c.start(1);
  c.start(2);
  std::vector<std::pair<raft::node_id, std::string>> raft_got;  // loop thread only
  c.lt.call([&] {
    c.links(2).raft_transport().set_receiver(
        [&](raft::node_id from, std::span<const std::byte> p) { raft_got.emplace_back(from, text(p)); });
    c.links(1).raft_transport().send(raft::node_id{2}, bytes("raft packet"));
    c.links(1).send(2, 1, bytes("cluster message"));
    c.links(1).send(2, 0, bytes("raft via send"));
    return 0;
  });
  ASSERT_TRUE(c.lt.wait_for([&] { return raft_got.size() >= 2 && !c.got(2).empty(); }));
  auto [rg, got] = c.lt.call([&] { return std::pair{raft_got, c.got(2)}; });
  ASSERT_EQ(rg.size(), 2u);
  EXPECT_EQ(rg[0].first, raft::node_id{1});
  EXPECT_EQ(rg[0].second, "raft packet");
  EXPECT_EQ(rg[1].second, "raft via send");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].channel, 1);
  EXPECT_EQ(got[0].text, "cluster message");
}

// The urgent lane (raft_transport().send_urgent) has its own connection: urgent and bulk frames queued
// while the peer is down each arrive in their lane's order once it is up; bulk_queued counts the bulk
// raft packets not yet written.
TEST(peer_links, urgent_raft_packets_and_bulk_frames_each_keep_their_lanes_order) {
  cluster c(2);
  c.start(1);  // node 2 is not listening yet: everything waits in node 1's queues
  const std::string filler(1u << 20, 'x');
  c.lt.call([&] {
    auto& t = c.links(1).raft_transport();
    for (int i = 0; i < 4; ++i) t.send(raft::node_id{2}, bytes(fmt::format("bulk-{}|{}", i, filler)));
    c.links(1).send(2, 1, bytes("cluster message"));  // channel 1: bulk lane, not a raft packet
    EXPECT_EQ(t.bulk_queued(raft::node_id{2}), 4u);
    t.send_urgent(raft::node_id{2}, bytes("urgent-0"));
    c.links(1).send_urgent(2, 1, bytes("urgent cluster message"));
    t.send_urgent(raft::node_id{2}, bytes("urgent-1"));
    EXPECT_EQ(t.bulk_queued(raft::node_id{2}), 4u);
    EXPECT_EQ(t.bulk_queued(raft::node_id{3}), 0u);  // not a peer
    return 0;
  });
  c.start(2);  // no raft receiver on node 2: channel 0 reaches its receiver too
  ASSERT_TRUE(c.wait_received(2, 8));
  std::vector<std::string> bulk, urgent;
  for (const auto& m : c.received(2)) {
    auto name = fmt::format("{}:{}", m.channel, m.text.substr(0, m.text.find('|')));
    (m.text.starts_with("urgent") ? urgent : bulk).push_back(std::move(name));
  }
  EXPECT_EQ(urgent, (std::vector<std::string>{"0:urgent-0", "1:urgent cluster message", "0:urgent-1"}));
  EXPECT_EQ(bulk,
            (std::vector<std::string>{"0:bulk-0", "0:bulk-1", "0:bulk-2", "0:bulk-3", "1:cluster message"}));
  EXPECT_EQ(c.lt.call([&] { return c.links(1).raft_transport().bulk_queued(raft::node_id{2}); }), 0u);
  const auto st = c.status(1, 2);
  EXPECT_EQ(st.queued_bytes, 0u);
  EXPECT_LE(st.max_urgent_queue_ms, st.max_queue_ms);
}

// An urgent frame waits for no bulk frame: a peer that does not read the bulk lane's connection keeps
// node 1's socket full in the middle of a bulk frame, with megabytes more queued behind it; the urgent
// packet arrives on the urgent lane's connection all the same. Then every bulk frame arrives whole and
// in order.
TEST(peer_links, an_urgent_packet_waits_for_no_bulk_frame) {
  cluster c(1);
  // Node 2 is a bare listener that reads only when the test says so.
  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(lfd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  auto o = c.options(1);
  o.peers[2] = {"127.0.0.1", *io::local_port(lfd)};
  c.start(std::move(o));
  // Node 1 dials one connection per lane; the hello tells which is which.
  timeval tv{5, 0};  // a wrong count fails instead of hanging
  auto read_exactly = [](int fd, std::size_t n) {
    std::string in;
    char buf[1 << 16];
    while (in.size() < n) {
      auto got = ::recv(fd, buf, std::min(sizeof buf, n - in.size()), 0);
      if (got <= 0) break;
      in.append(buf, static_cast<std::size_t>(got));
    }
    return in;
  };
  ::setsockopt(lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);  // accept too
  int lane_fd[peer_links::lane_count] = {-1, -1};
  for (int i = 0; i < 2; ++i) {
    const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(fd, 0);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const std::string h = read_exactly(fd, peer_links::hello_size);
    ASSERT_EQ(h.size(), peer_links::hello_size);
    const std::uint32_t lane = static_cast<unsigned char>(h[20]);
    ASSERT_TRUE(h == hello(1, 4, lane)) << "lane " << lane;
    ASSERT_LT(lane, peer_links::lane_count);
    lane_fd[lane] = fd;
  }
  ASSERT_GE(lane_fd[peer_links::bulk_lane], 0);
  ASSERT_GE(lane_fd[peer_links::urgent_lane], 0);
  constexpr int bulk = 32;  // more than loopback's socket buffers hold
  const std::string filler(1u << 20, 'x');
  c.lt.call([&] {
    for (int i = 0; i < bulk; ++i)
      c.links(1).raft_transport().send(raft::node_id{2}, bytes(fmt::format("bulk-{}|{}", i, filler)));
    return 0;
  });
  // Wait until the bulk socket is full: bytes written, nothing moving (the kernel holds at most
  // options::send_buffer and the receiving socket's buffer, far less than the queue).
  std::uint64_t before = 0;
  ASSERT_TRUE(c.lt.wait_for([&] {
    const auto sent = c.links(1).status()[0].bytes_sent;
    const bool still = sent == before && sent > 2 * peer_links::hello_size;
    before = sent;
    return still;
  }));
  c.lt.call([&] {
    c.links(1).raft_transport().send_urgent(raft::node_id{2}, bytes("urgent"));
    return 0;
  });
  EXPECT_EQ(read_exactly(lane_fd[peer_links::urgent_lane], peer_links::header_size + 6), frame(0, "urgent"));
  // Now read the bulk lane: every frame whole, in order.
  // "bulk-0|" .. "bulk-9|" are 7 bytes before the filler, "bulk-10|" .. "bulk-31|" 8.
  const std::size_t total = bulk * (peer_links::header_size + 7 + filler.size()) + (bulk - 10);
  const std::string in = read_exactly(lane_fd[peer_links::bulk_lane], total);
  ASSERT_EQ(in.size(), total);
  std::size_t at = 0;
  for (int i = 0; i < bulk; ++i) {
    const std::string payload = fmt::format("bulk-{}|{}", i, filler);
    ASSERT_EQ(in.substr(at, peer_links::header_size + payload.size()), frame(0, payload)) << "frame " << i;
    at += peer_links::header_size + payload.size();
  }
  for (int fd : lane_fd) ::close(fd);
  ::close(lfd);
}

TEST(peer_links, destroying_with_connects_in_flight_is_clean) {
  loop_thread lt;
  reserved_port self_port, down_port;
  peer_links::options o;
  o.self = 1;
  o.listen = {"127.0.0.1", self_port.port()};
  o.peers = {{1, o.listen},
             {2, {"127.0.0.1", down_port.port()}},  // refused: redialled after a backoff
             {3, {"10.255.255.1", 9}}};             // unroutable: the connect hangs (or fails at once)
  // Destroyed in the turn it opened in (connects in flight, frames queued).
  lt.call([&] {
    auto r = peer_links::open(lt.loop, o);
    EXPECT_TRUE(r);
    (*r)->send(2, 1, bytes("x"));
    (*r)->send(3, 0, bytes("y"));
    return 0;
  });
  // Destroyed a few turns later (retry timers pending), with an accepted connection that never said hello.
  auto links = lt.call([&] { return peer_links::open(lt.loop, o).value(); });
  lt.call([&] {
    links->send(2, 1, bytes("x"));
    return 0;
  });
  raw_client silent(self_port.port());
  ASSERT_TRUE(lt.wait_for([&] { return lt.loop.timer_count() > 0; }));
  lt.call([&] {
    links.reset();
    return 0;
  });
  EXPECT_TRUE(silent.closed_by_node());
  // The loop keeps running with nothing of the links left.
  EXPECT_EQ(lt.call([&] { return lt.loop.timer_count(); }), 0u);
}

// Membership changes: node 3 is unknown to nodes 1 and 2 (its hellos are refused) until they add it;
// once removed, its connections are closed, its frames no longer arrive and nothing is sent to it, and
// a frame that removes its own sender from inside the receiver ends that connection cleanly.
TEST(peer_links, peers_join_and_leave_at_run_time) {
  cluster c(3);
  auto only = [&](std::uint64_t self, std::vector<std::uint64_t> ids) {
    auto o = c.options(self);
    std::erase_if(o.peers,
                  [&](const auto& p) { return std::find(ids.begin(), ids.end(), p.first) == ids.end(); });
    return o;
  };
  c.start(only(1, {1, 2}));
  c.start(only(2, {1, 2}));
  c.start(3);  // knows everyone
  c.send(3, 1, 1, "too early");
  ASSERT_TRUE(c.lt.wait_for([&] { return c.links(1).status().size() == 1; }));
  const std::string at3 = "127.0.0.1:" + std::to_string(c.port(3));
  for (std::uint64_t id : {1, 2}) {
    ASSERT_TRUE(c.lt.call([&] { return c.links(id).add_peer(3, at3); }));
    EXPECT_EQ(c.lt.call([&] { return c.links(id).status().size(); }), 2u);
  }
  EXPECT_FALSE(c.lt.call([&] { return c.links(1).add_peer(4, "nowhere"); }));
  EXPECT_TRUE(c.lt.call([&] { return c.links(1).add_peer(3, at3); }));  // again: nothing changes
  ASSERT_TRUE(c.lt.wait_for([&] {
    auto s = c.links(1).status();
    return s.size() == 2 && s[1].peer == 3 && s[1].out_connected && s[1].in_connected;
  }));
  c.send(3, 1, 1, "3-1-1-0");
  c.send(1, 3, 1, "1-3-1-0");
  ASSERT_TRUE(c.wait_received(1, 1));
  ASSERT_TRUE(c.wait_received(3, 1));
  auto got = c.received(1);
  EXPECT_EQ(got.back().text, "3-1-1-0");  // "too early" was refused with its connection, or arrived first
  EXPECT_EQ(c.received(3).back().text, "1-3-1-0");

  // Node 2 removes node 3 from inside its receiver, on a frame from node 3.
  c.lt.call([&] {
    c.links(2).set_receiver([&](std::uint64_t from, std::uint8_t, std::span<const std::byte>) {
      if (from == 3) c.links(2).remove_peer(3);
    });
    return 0;
  });
  c.send(3, 2, 1, "leave");
  c.send(3, 2, 1, "after");
  ASSERT_TRUE(c.lt.wait_for([&] { return c.links(2).status().size() == 1; }));
  c.lt.call([&] {
    c.links(1).remove_peer(3);
    c.links(1).remove_peer(3);  // twice: nothing more
    c.links(1).send(3, 1, bytes("lost"));
    return 0;
  });
  const auto before = c.received(1).size();
  c.send(3, 1, 1, "refused");
  std::this_thread::sleep_for(200ms);  // what did not arrive cannot be waited for
  EXPECT_EQ(c.received(1).size(), before);
  EXPECT_EQ(c.received(3).back().text, "1-3-1-0");
  // Node 1 still talks to node 2.
  c.send(2, 1, 1, "2-1-1-0");
  ASSERT_TRUE(c.lt.wait_for([&] { return c.got(1).size() == before + 1; }));
  EXPECT_EQ(c.received(1).back().text, "2-1-1-0");
}

}  // namespace
}  // namespace weir::cluster
