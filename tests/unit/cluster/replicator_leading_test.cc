// The `leading` message (cluster/messages.h, docs/replication.md "Elections"): a follower whose leader's
// raft frames wait in a queue that does not drain (a group replicating only large entries, behind other
// groups' megabytes) keeps its leader as long as the leader's node says, on the urgent lane, that it still
// leads the group; without that word it stands for election.
#include <gtest/gtest.h>

#include <cstdint>

#include "cluster/replicator.h"
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

}  // namespace
}  // namespace weir::cluster
