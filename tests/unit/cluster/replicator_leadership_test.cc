// leadership_watch (cluster/replicator_leadership.h): which changes of a group's role, term and leader
// count as an election, a win, a loss or a new leader; the counts by cause; and the log's rate limit
// (at most lines_per_window lines per window, the rest summed up).
#include <gtest/gtest.h>

#include "cluster/replicator_leadership.h"

namespace weir::cluster {
namespace {

using view = leadership_watch::view;
constexpr raft_role F = raft_role::follower;
constexpr raft_role C = raft_role::candidate;
constexpr raft_role L = raft_role::leader;

TEST(leadership_watch, an_unchanged_view_is_no_transition) {
  leadership_watch w(1, 2);
  ASSERT_TRUE(w.observe(0, {F, 1, 2}));  // the first view: a leader becomes known
  EXPECT_FALSE(w.observe(0, {F, 1, 2}));
  EXPECT_FALSE(w.observe(5, {F, 1, 2}));  // no such group
}

TEST(leadership_watch, a_follower_that_stands_then_wins) {
  leadership_watch w(1, 1);
  auto t = w.observe(0, {F, 3, 2});
  ASSERT_TRUE(t);
  w.record(*t, leadership_cause::unknown, "", 0);
  t = w.observe(0, {C, 4, 0});
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->election_started);
  EXPECT_FALSE(t->won || t->lost || t->leader_changed);
  EXPECT_EQ(t->previous_leader, 2u);
  w.record(*t, leadership_cause::timeout, "", 0);
  // A split vote: the candidate stands again in a newer term.
  t = w.observe(0, {C, 5, 0});
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->election_started);
  w.record(*t, leadership_cause::timeout, "", 0);
  t = w.observe(0, {L, 5, 1});
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->won);
  EXPECT_TRUE(t->leader_changed);
  EXPECT_FALSE(t->election_started || t->lost);
  w.record(*t, leadership_cause::won, "", 0);
  const leadership_counts& c = w.counts();
  EXPECT_EQ(c.elections_started, 2u);
  EXPECT_EQ(c.elections_timeout, 2u);
  EXPECT_EQ(c.leaderships_won, 1u);
  EXPECT_EQ(c.leaderships_lost, 0u);
  EXPECT_EQ(c.leader_changes, 2u);  // 0 -> 2 at the first view, then 2 -> 1
}

TEST(leadership_watch, a_leader_that_steps_down_counts_a_loss_by_cause) {
  leadership_watch w(1, 2);
  for (std::uint32_t g = 0; g < 2; ++g) w.observe(g, {L, 2, 1});
  auto t = w.observe(0, {F, 3, 0});
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->lost);
  EXPECT_FALSE(t->leader_changed);  // no leader known yet
  w.record(*t, leadership_cause::higher_term, "a RequestVote of term 3 from node 2", 0);
  t = w.observe(1, {F, 2, 0});
  ASSERT_TRUE(t);
  w.record(*t, leadership_cause::quorum_lost, "", 0);
  EXPECT_EQ(w.counts().leaderships_lost, 2u);
  EXPECT_EQ(w.counts().lost_higher_term, 1u);
  EXPECT_EQ(w.counts().lost_quorum, 1u);
  // The new leader becomes known on this follower: a leader change, no line of its own.
  const std::uint64_t lines = w.lines_logged();
  t = w.observe(0, {F, 3, 2});
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->leader_changed);
  EXPECT_EQ(t->previous_leader, 1u);
  w.record(*t, leadership_cause::unknown, "", 0);
  EXPECT_EQ(w.lines_logged(), lines);
  // The leader forgotten (its connection closed) and found again: no change of leader.
  EXPECT_FALSE(w.observe(0, {F, 3, 0}).has_value());
  EXPECT_FALSE(w.observe(0, {F, 3, 2}).has_value());
}

// balance-leaders waits while this node sees unrest: an election of its own by timeout or a closed
// link, or a leadership lost for want of a quorum or to a newer term; hand-overs and wins are calm.
TEST(leadership_watch, unrest_is_a_timeout_or_a_lost_quorum_never_a_hand_over) {
  leadership_watch w(1, 4);
  const std::int64_t never = w.last_unrest_ms();
  EXPECT_LT(never, -1'000'000);
  // A group's first election on a node that starts: no leader was known before.
  w.record(*w.observe(3, {C, 1, 0}), leadership_cause::timeout, "", 5);
  EXPECT_EQ(w.last_unrest_ms(), never);
  for (std::uint32_t g = 0; g < 3; ++g) w.record(*w.observe(g, {F, 2, 2}), leadership_cause::unknown, "", 10);
  // Handed group 0 by node 2, and won it; lost it again in a hand-over: calm all along.
  w.record(*w.observe(0, {C, 3, 0}), leadership_cause::transfer, "", 20);
  w.record(*w.observe(0, {L, 3, 1}), leadership_cause::won, "", 30);
  w.record(*w.observe(0, {F, 4, 0}), leadership_cause::transfer, "", 40);
  EXPECT_EQ(w.last_unrest_ms(), never);
  // Group 1's timer ran out.
  w.record(*w.observe(1, {C, 3, 0}), leadership_cause::timeout, "", 50);
  EXPECT_EQ(w.last_unrest_ms(), 50);
  w.record(*w.observe(1, {L, 3, 1}), leadership_cause::won, "", 60);
  EXPECT_EQ(w.last_unrest_ms(), 50);
  // Group 1 lost for want of a quorum; group 2 stood when its leader's connection closed.
  w.record(*w.observe(1, {F, 3, 0}), leadership_cause::quorum_lost, "", 70);
  EXPECT_EQ(w.last_unrest_ms(), 70);
  w.record(*w.observe(2, {C, 3, 0}), leadership_cause::link_closed, "", 80);
  EXPECT_EQ(w.last_unrest_ms(), 80);
  // A leadership lost to a newer term that was no hand-over.
  w.record(*w.observe(2, {L, 3, 1}), leadership_cause::won, "", 90);
  w.record(*w.observe(2, {F, 5, 0}), leadership_cause::higher_term, "", 100);
  EXPECT_EQ(w.last_unrest_ms(), 100);
  // Time never goes back (a record with an older stamp).
  w.record(*w.observe(2, {C, 6, 0}), leadership_cause::timeout, "", 95);
  EXPECT_EQ(w.last_unrest_ms(), 100);
  w.count_handover();
  w.count_balance_held();
  w.count_balance_held();
  EXPECT_EQ(w.counts().handovers_started, 1u);
  EXPECT_EQ(w.counts().balance_held, 2u);
}

TEST(leadership_watch, the_lines_of_a_window_are_bounded_and_the_rest_summed_up) {
  const unsigned n = leadership_watch::lines_per_window + 7;
  leadership_watch w(1, n);
  for (std::uint32_t g = 0; g < n; ++g) {
    w.observe(g, {F, 1, 2});
    auto t = w.observe(g, {C, 2, 0});
    ASSERT_TRUE(t);
    w.record(*t, leadership_cause::timeout, "detail", 100);
  }
  EXPECT_EQ(w.lines_logged(), leadership_watch::lines_per_window);
  EXPECT_EQ(w.lines_suppressed(), 7u);
  EXPECT_EQ(w.counts().elections_started, n);  // every one counted
  // A new window logs again.
  w.flush(100 + leadership_watch::window_ms);
  auto t = w.observe(0, {C, 3, 0});
  ASSERT_TRUE(t);
  w.record(*t, leadership_cause::timeout, "", 100 + leadership_watch::window_ms + 1);
  EXPECT_EQ(w.lines_logged(), leadership_watch::lines_per_window + 1);
}

TEST(leadership_watch, a_line_says_what_happened_and_why) {
  leadership_watch w(3, 8);
  w.observe(7, {F, 4, 1});
  auto t = w.observe(7, {C, 5, 0});
  ASSERT_TRUE(t);
  const std::string line = w.describe(*t, leadership_cause::timeout, "nothing from node 1 for 1500 ms");
  EXPECT_NE(line.find("raft group 7: node 3 stands for election in term 5"), std::string::npos) << line;
  EXPECT_NE(line.find("last leader 1"), std::string::npos) << line;
  EXPECT_NE(line.find("election timeout: nothing from node 1 for 1500 ms"), std::string::npos) << line;
}

}  // namespace
}  // namespace weir::cluster
