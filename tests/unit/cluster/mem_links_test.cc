// mem_links (the cluster simulation's in-memory cluster::links): channels, the raft adapter, status.
#include "mem_links.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/sim/sim_scheduler.h"

namespace weir::cluster::sim {
namespace {

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}
std::string text_of(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

TEST(mem_links, channel_zero_goes_to_raft_and_the_others_to_the_receiver) {
  raft::sim_scheduler sched(1);
  raft::mem_network net(sched);
  bool up2 = true;
  mem_links a(net, 1, {2}, [&](std::uint64_t) { return up2; });
  mem_links b(net, 2, {1}, [](std::uint64_t) { return true; });
  std::vector<std::string> raft_got, msg_got;
  b.raft_transport().set_receiver([&](raft::node_id from, std::span<const std::byte> p) {
    EXPECT_EQ(from.value(), 1u);
    raft_got.push_back(text_of(p));
  });
  b.set_receiver([&](std::uint64_t from, std::uint8_t channel, std::span<const std::byte> p) {
    EXPECT_EQ(from, 1u);
    msg_got.push_back(std::to_string(channel) + ":" + text_of(p));
  });
  const std::string r = "raft", m = "message";
  a.raft_transport().send(raft::node_id(2), std::vector<std::byte>(bytes_of(r).begin(), bytes_of(r).end()));
  a.send(2, 1, bytes_of(m));
  a.send(2, 0, bytes_of(r));  // channel 0 through send() is raft's too
  while (sched.run_one()) {
  }
  EXPECT_EQ(raft_got, (std::vector<std::string>{"raft", "raft"}));
  EXPECT_EQ(msg_got, (std::vector<std::string>{"1:message"}));

  auto st = a.status();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].peer, 2u);
  EXPECT_TRUE(st[0].out_connected);
  EXPECT_EQ(st[0].bytes_sent, 3u * 1 + 2 * r.size() + m.size());
  net.partition({raft::node_id(2)});
  EXPECT_FALSE(a.status()[0].out_connected);
  net.heal();
  up2 = false;
  EXPECT_FALSE(a.status()[0].in_connected);
}

TEST(mem_links, a_node_that_is_gone_receives_nothing) {
  raft::sim_scheduler sched(1);
  raft::mem_network net(sched);
  mem_links a(net, 1, {2}, [](std::uint64_t) { return true; });
  auto b =
      std::make_unique<mem_links>(net, 2, std::vector<std::uint64_t>{1}, [](std::uint64_t) { return true; });
  int got = 0;
  b->set_receiver([&](std::uint64_t, std::uint8_t, std::span<const std::byte>) { ++got; });
  const std::string m = "x";
  a.send(2, 1, bytes_of(m));
  b.reset();  // the node goes down with the packet in flight
  while (sched.run_one()) {
  }
  EXPECT_EQ(got, 0);
  EXPECT_EQ(net.packets_lost(), 1u);
}

}  // namespace
}  // namespace weir::cluster::sim
