// Lanes (cluster/replicator.h, "Lanes"): a node's groups split over several replicators, each with its
// own node log and links; lane 0 decides the membership and the others follow it. With real replicators
// and libraft groups on the simulation's network, disks and clock: every lane elects and applies its own
// groups only; a membership change made through lane 0 reaches every lane's groups (a node added becomes
// a voter of all of them, a node removed leaves all of them and knows it left); a following lane takes
// no change itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "cluster/replicator.h"
#include "replicator_sim_cluster.h"

namespace weir::cluster {
namespace {

using namespace sim;  // the simulated cluster of replicator_sim_cluster.h

constexpr unsigned lanes = 2;  // 4 groups: lane 0 runs 0 and 2, lane 1 runs 1 and 3

std::vector<std::uint32_t> groups_of(const replicator& r) {
  std::vector<std::uint32_t> out;
  for (const auto& g : r.status()) out.push_back(g.group);
  return out;
}

TEST(replicator_lanes, every_lane_elects_and_applies_its_own_groups) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    membership_cluster c(seed, 0, false, /*balance=*/true, false, lanes);
    ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
    for (std::uint64_t id = 1; id <= 3; ++id) {
      EXPECT_EQ(groups_of(*c.node(id).repl), (std::vector<std::uint32_t>{0, 2}));
      EXPECT_EQ(groups_of(*c.node(id).more.at(0).repl), (std::vector<std::uint32_t>{1, 3}));
      EXPECT_TRUE(c.node(id).more[0].repl->owns(3));
      EXPECT_FALSE(c.node(id).more[0].repl->owns(2));
    }
    // A write of each group, through a different node's lane each time: applied by that group on every
    // node, nowhere else.
    const std::vector<std::byte> command{std::byte{1}};
    for (std::uint32_t g = 0; g < 4; ++g) {
      sim::sim_node& n = c.node(1 + (g + seed) % 3);
      replicator& r = g % lanes == 0 ? *n.repl : *n.more[0].repl;
      r.submit(g, command);
    }
    ASSERT_TRUE(c.run_until([&] {
      for (std::uint64_t id = 1; id <= 3; ++id)
        for (std::uint32_t g = 0; g < 4; ++g)
          if (c.applied(id, g) != 1) return false;
      return true;
    })) << "every group applies its write on every node";
    EXPECT_TRUE(c.failed().empty());
    // A lane's groups only: a write of group 2 handed to lane 1 fails, and is applied nowhere.
    const std::uint64_t ticket = c.node(2).more[0].repl->submit(2, command);
    ASSERT_TRUE(c.run_until([&] { return c.failed().contains(ticket); }, 100));
    EXPECT_EQ(c.failed().at(ticket), submit_error::no_leader);
    bool read = true;
    c.node(2).more[0].repl->read_index(0, [&](bool ok) { read = ok; });
    c.run_until([] { return false; }, 50);
    EXPECT_FALSE(read) << "a read index of another lane's group";
    for (std::uint64_t id = 1; id <= 3; ++id) EXPECT_EQ(c.applied(id, 2), 1u);
  }
}

TEST(replicator_lanes, a_following_lane_takes_no_membership_change) {
  membership_cluster c(5, 0, false, false, false, lanes);
  ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
  answer a;
  c.node(1).more[0].repl->add_member(4, address_of(4), keep(a));
  ASSERT_TRUE(c.run_until([&] { return a.done; }, 100));
  ASSERT_FALSE(a.r);
  EXPECT_EQ(a.r.err().as<membership_errc>(), membership_errc::invalid) << a.r.err().reason;
}

// Node 4 joins through lane 0 and becomes a voter of every lane's groups; then node 3 is removed and
// leaves every lane's groups (those it leads handed over first), and each of its lanes knows it left.
// Even seeds take group snapshots.
TEST(replicator_lanes, membership_changes_reach_every_lane) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    membership_cluster c(seed, seed % 2 == 0 ? 4 : 0, /*joining=*/true, /*balance=*/true, false, lanes);
    ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
    answer added;
    c.node(1 + seed % 3).repl->add_member(4, address_of(4), keep(added));
    ASSERT_TRUE(c.run_until([&] { return added.done; }));
    ASSERT_TRUE(added.r) << added.r.err().reason;
    EXPECT_TRUE(c.run_until([&] { return c.agree_on(*added.r) && c.voters_are(*added.r); }, 30000))
        << "node 4 is a voter of every lane's groups";
    // Node 4's lanes apply what its groups commit from now on.
    const std::vector<std::byte> command{std::byte{7}};
    for (std::uint32_t g = 0; g < 4; ++g)
      (g % lanes == 0 ? *c.node(4).repl : *c.node(4).more[0].repl).submit(g, command);
    ASSERT_TRUE(c.run_until([&] {
      for (std::uint64_t id = 1; id <= 4; ++id)
        for (std::uint32_t g = 0; g < 4; ++g)
          if (c.applied(id, g) < 1) return false;
      return true;
    }));
    answer removed;
    c.node(1).repl->remove_member(3, keep(removed));
    ASSERT_TRUE(c.run_until([&] { return removed.done; }));
    ASSERT_TRUE(removed.r) << removed.r.err().reason;
    EXPECT_TRUE(c.run_until([&] { return c.agree_on(*removed.r) && c.voters_are(*removed.r); }, 30000))
        << "node 3 left every lane's groups";
    EXPECT_TRUE(c.run_until(
        [&] {
          for (const replicator* r : c.node(3).replicators())
            if (!r->left()) return false;
          return true;
        },
        10000))
        << "every lane of node 3 knows it left";
    for (std::uint64_t id : {1u, 2u, 4u})
      for (const replicator* r : c.node(id).replicators()) EXPECT_FALSE(r->left());
  }
}

// A node down while a change was made: at its restart lane 0 learns the decision from group 0's log
// (its members file is older), and its following lane, which read the same old file, takes it from lane
// 0's view; the node then votes in every lane's groups again and applies what they commit.
TEST(replicator_lanes, a_node_restarted_after_a_change_follows_it_in_every_lane) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    membership_cluster c(seed, 0, /*joining=*/true, /*balance=*/true, false, lanes);
    ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
    c.stop(c.node(3));
    answer added;
    c.node(1).repl->add_member(4, address_of(4), keep(added));
    ASSERT_TRUE(c.run_until([&] { return added.done; }));
    ASSERT_TRUE(added.r) << added.r.err().reason;
    c.run_until([] { return false; }, 2000);
    c.start(c.node(3));
    EXPECT_EQ(c.node(3).more.at(0).repl->desired_membership().epoch, 0u) << "its members file is older";
    EXPECT_TRUE(c.run_until([&] { return c.agree_on(*added.r) && c.voters_are(*added.r); }, 30000))
        << "node 3's lanes follow the change it missed";
    const unsigned before = c.applied(3, 3);
    c.node(4).more.at(0).repl->submit(3, std::vector<std::byte>{std::byte{9}});
    EXPECT_TRUE(c.run_until([&] { return c.applied(3, 3) > before; }));
  }
}

}  // namespace
}  // namespace weir::cluster
