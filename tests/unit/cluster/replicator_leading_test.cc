// The `leading` message (cluster/messages.h, docs/replication.md "Elections"): a follower whose leader's
// raft frames wait in a queue that does not drain (a group replicating only large entries, behind other
// groups' megabytes) keeps its leader as long as the leader's node says, on the urgent lane, that it still
// leads the group; without that word it stands for election. And the other way round (vouched contacts):
// a leader whose followers' raft frames wait keeps the group while their nodes' other frames arrive;
// when nothing of theirs arrives, check-quorum makes it step down.
#include <gtest/gtest.h>

#include <cstdint>

#include "cluster/replicator.h"
#include "raft/wire_format.h"
#include "replicator_sim_cluster.h"

namespace weir::cluster {
namespace {

using sim::membership_cluster;

struct group_view {
  std::uint64_t leader = 0;
  std::uint64_t term = 0;
};

group_view view_of(membership_cluster& c, std::uint64_t node, std::uint32_t group) {
  for (const auto& g : c.node(node).repl->status())
    if (g.group == group) return {g.leader, g.term};
  return {};
}

// Holds node `leader`'s frames of `channels` for node `follower` for 10 election timeouts (3 s of the
// simulation's time), then lets them go; what group 0 looked like on the follower before and after.
struct hold_result {
  group_view before, after;
  std::uint64_t elections_started = 0;  // by the follower, during the hold
};

hold_result hold_leader_frames(std::uint64_t seed, std::initializer_list<std::uint8_t> channels) {
  membership_cluster c(seed);
  EXPECT_TRUE(c.run_until([&] { return c.every_group_led(); }));
  hold_result out;
  const std::uint64_t leader = view_of(c, 1, 0).leader;
  EXPECT_NE(leader, 0u);
  const std::uint64_t follower = leader == 1 ? 2 : 1;
  EXPECT_TRUE(c.run_until([&] { return view_of(c, follower, 0).leader == leader; }));
  out.before = view_of(c, follower, 0);
  const std::uint64_t started = c.node(follower).repl->leadership().elections_started;
  for (std::uint8_t ch : channels) c.node(leader).links->hold(follower, ch, true);
  c.run_until([] { return false; }, 3000);
  out.elections_started = c.node(follower).repl->leadership().elections_started - started;
  out.after = view_of(c, follower, 0);
  for (std::uint8_t ch : channels) c.node(leader).links->hold(follower, ch, false);
  c.run_until([] { return false; }, 1000);
  EXPECT_TRUE(c.every_group_led());
  return out;
}

TEST(replicator_leading, a_follower_keeps_a_leader_whose_raft_frames_wait_while_it_says_it_leads) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    hold_result r = hold_leader_frames(seed, {0});  // raft's frames wait; cluster messages flow
    EXPECT_EQ(r.elections_started, 0u) << "seed " << seed;
    EXPECT_EQ(r.after.term, r.before.term) << "seed " << seed;
    EXPECT_EQ(r.after.leader, r.before.leader) << "seed " << seed;
  }
}

TEST(replicator_leading, without_the_word_the_follower_stands) {
  // The premise of the test above: held raft frames alone do make the follower stand.
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    hold_result r = hold_leader_frames(seed, {0, 1});  // and the cluster messages (channel 1)
    EXPECT_GT(r.elections_started, 0u) << "seed " << seed;
    EXPECT_GT(r.after.term, r.before.term) << "seed " << seed;
  }
}

// Whether a raft packet holds an AppendEntries of group 0.
bool has_group0_append(std::span<const std::byte> packet) {
  while (!packet.empty()) {
    auto d = raft::wire::decode_frame(packet);
    if (!d || !d->has_value()) return false;
    if ((*d)->msg.group.value() == 0 && std::holds_alternative<raft::wire::append_entries>((*d)->msg.payload))
      return true;
    packet = packet.subspan((*d)->consumed);
  }
  return false;
}

// Node 3 never gets node 1's AppendEntries of group 0 (its votes and everything else arrive): once node 1
// wins group 0 (balance-leaders hands it there), node 3 is a follower of that term that knows no leader.
// The word of node 1 (`leading`) keeps it from standing, and the group's term stays.
TEST(replicator_leading, a_follower_that_knows_no_leader_of_its_term_takes_the_word_of_its_leader) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    membership_cluster c(seed, 0, /*joining=*/false, /*balance=*/true);
    c.node(1).links->lose_raft_packets(3, has_group0_append);
    ASSERT_TRUE(c.run_until([&] {
      return view_of(c, 1, 0).leader == 1 && view_of(c, 2, 0).leader == 1 &&
             view_of(c, 3, 0).term == view_of(c, 1, 0).term;
    })) << "seed "
        << seed;
    const std::uint64_t term = view_of(c, 1, 0).term;
    EXPECT_EQ(view_of(c, 3, 0).leader, 0u) << "seed " << seed;
    c.run_until([] { return false; }, 3000);  // 10 election timeouts
    EXPECT_EQ(view_of(c, 1, 0).leader, 1u) << "seed " << seed;
    EXPECT_EQ(view_of(c, 1, 0).term, term) << "seed " << seed;
    EXPECT_EQ(view_of(c, 3, 0).term, term) << "seed " << seed;
    c.node(1).links->lose_raft_packets(3, nullptr);
  }
}

// Holds the raft frames (and, with `all`, every frame) of both followers of group 0 for its leader for
// 10 election timeouts. Balanced leaders: group 0 on node 1, group 1 on node 2, whose `leading` messages
// to node 1 then still flow unless `all`.
struct quorum_hold_result {
  bool led_before = false, led_after = false;
  std::uint64_t term_before = 0, term_after = 0;
  std::uint64_t lost_quorum = 0;  // node 1's leaderships lost for want of a quorum, during the hold
};

quorum_hold_result hold_follower_frames(std::uint64_t seed, bool all) {
  membership_cluster c(seed, 0, /*joining=*/false, /*balance=*/true);
  quorum_hold_result out;
  EXPECT_TRUE(c.run_until([&] { return view_of(c, 1, 0).leader == 1 && view_of(c, 2, 1).leader == 2; }));
  out.led_before = view_of(c, 1, 0).leader == 1;
  out.term_before = view_of(c, 1, 0).term;
  const std::uint64_t lost = c.node(1).repl->leadership().lost_quorum;
  for (std::uint64_t f : {2u, 3u}) {
    c.node(f).links->hold(1, 0, true);
    if (all) c.node(f).links->hold(1, 1, true);
  }
  c.run_until([] { return false; }, 3000);
  out.lost_quorum = c.node(1).repl->leadership().lost_quorum - lost;
  out.led_after = view_of(c, 1, 0).leader == 1;
  out.term_after = view_of(c, 1, 0).term;
  for (std::uint64_t f : {2u, 3u}) {
    c.node(f).links->hold(1, 0, false);
    c.node(f).links->hold(1, 1, false);
  }
  c.run_until([] { return false; }, 1000);
  EXPECT_TRUE(c.every_group_led());
  return out;
}

TEST(replicator_leading, a_leader_keeps_its_group_while_its_followers_raft_frames_wait) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    quorum_hold_result r = hold_follower_frames(seed, false);
    EXPECT_TRUE(r.led_before) << "seed " << seed;
    EXPECT_EQ(r.lost_quorum, 0u) << "seed " << seed;
    EXPECT_TRUE(r.led_after) << "seed " << seed;
    EXPECT_EQ(r.term_after, r.term_before) << "seed " << seed;
  }
}

TEST(replicator_leading, a_leader_that_hears_nothing_from_its_followers_steps_down) {
  // The premise of the test above, and check-quorum kept: with every frame held, node 1 gives group 0 up.
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    quorum_hold_result r = hold_follower_frames(seed, true);
    EXPECT_TRUE(r.led_before) << "seed " << seed;
    EXPECT_GT(r.lost_quorum, 0u) << "seed " << seed;
    EXPECT_FALSE(r.led_after && r.term_after == r.term_before) << "seed " << seed;
  }
}

}  // namespace
}  // namespace weir::cluster
