// Membership changes through group 0 (cluster/replicator.h, docs/replication.md "Membership changes"),
// with real replicators and libraft groups on the simulation's network, disks and clock: changes taken by
// two nodes at once are both decided (applied in order, or the later one refused as stale), never lost;
// every node ends with the same committed membership; a change sent after the previous one was answered
// is never stale; group 0's snapshot carries the membership to a node that restarts from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cluster/messages.h"
#include "cluster/replicator.h"
#include "raft/node_log.h"
#include "replicator_sim_cluster.h"
#include "storage/mem_env.h"
#include "support/sim/mem_network.h"
#include "support/sim/sim_scheduler.h"

namespace weir::cluster {
namespace {

using sim::address_of;
using sim::answer;
using sim::keep;
using sim::membership_cluster;
using sim::peer_only_links;
using sim::sim_node;
using std::chrono::milliseconds;

membership initial() {
  return membership{0, {{1, address_of(1)}, {2, address_of(2)}, {3, address_of(3)}}};
}

TEST(replicator_membership, changes_taken_by_two_nodes_at_once_are_both_decided) {
  int all_applied = 0, some_refused = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    membership_cluster c(seed);
    ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
    // In the same instant: node 1 adds node 4 (which never starts: it stays a spare), node 2 removes
    // node 3 and, every other seed, node 3 re-posts itself.
    struct proposal {
      answer a;
      bool add = false;
      std::uint64_t id = 0;
    };
    std::vector<proposal> ps(seed % 2 == 0 ? 3 : 2);
    ps[0].add = true;
    ps[0].id = 4;
    c.node(1).repl->add_member(4, address_of(4), keep(ps[0].a));
    ps[1].id = 3;
    c.node(2).repl->remove_member(3, keep(ps[1].a));
    if (ps.size() == 3) {
      ps[2].add = true;
      ps[2].id = 3;
      c.node(3).repl->add_member(3, address_of(3), keep(ps[2].a));
    }
    ASSERT_TRUE(c.run_until([&] {
      for (const auto& p : ps)
        if (!p.a.done) return false;
      return true;
    }));
    std::uint64_t successes = 0;
    for (const auto& p : ps) {
      if (p.a.r) {
        ++successes;
        continue;
      }
      // The only refusal these changes can get: another change was decided first.
      EXPECT_EQ(p.a.r.err().as<membership_errc>(), membership_errc::stale) << p.a.r.err().reason;
    }
    ASSERT_GE(successes, 1u);
    // The successes are epochs 1..n, one each, and each made its own change to the one before: none
    // was lost, and the last is what every node committed.
    membership last = initial();
    for (std::uint64_t epoch = 1; epoch <= successes; ++epoch) {
      const proposal* at = nullptr;
      for (const auto& p : ps)
        if (p.a.r && p.a.r->epoch == epoch) {
          EXPECT_EQ(at, nullptr) << "two changes answered with epoch " << epoch;
          at = &p;
        }
      ASSERT_NE(at, nullptr) << "no change answered with epoch " << epoch;
      auto made = at->add ? with_member(last, at->id, address_of(at->id)) : without_member(last, at->id);
      ASSERT_TRUE(made) << made.err().reason;
      EXPECT_EQ(*at->a.r, *made);
      last = *made;
    }
    EXPECT_TRUE(c.run_until([&] { return c.agree_on(last); })) << "every node commits epoch " << last.epoch;
    (successes == ps.size() ? all_applied : some_refused) += 1;
  }
  std::printf("changes at once: %d seeds applied all, %d refused some as stale\n", all_applied, some_refused);
}

TEST(replicator_membership, a_change_sent_after_the_previous_answer_is_never_stale) {
  membership_cluster c(77);
  ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
  answer a, b, d;
  c.node(1).repl->add_member(4, address_of(4), keep(a));
  ASSERT_TRUE(c.run_until([&] { return a.done; }));
  ASSERT_TRUE(a.r) << a.r.err().reason;
  EXPECT_EQ(a.r->epoch, 1u);
  // At once, through another node that may not have applied the first yet: its base is read from group 0.
  c.node(3).repl->remove_member(4, keep(b));
  ASSERT_TRUE(c.run_until([&] { return b.done; }));
  ASSERT_TRUE(b.r) << b.r.err().reason;
  EXPECT_EQ(b.r->epoch, 2u);
  EXPECT_EQ(b.r->members, initial().members);
  // Refused by today's validation: 400 material, nothing committed.
  c.node(2).repl->remove_member(9, keep(d));
  ASSERT_TRUE(c.run_until([&] { return d.done; }));
  ASSERT_FALSE(d.r);
  EXPECT_EQ(d.r.err().as<membership_errc>(), membership_errc::invalid);
  EXPECT_TRUE(c.run_until([&] { return c.agree_on(*b.r); }));
}

TEST(replicator_membership, group_0s_snapshot_carries_the_membership) {
  membership_cluster c(5, /*snapshot_threshold=*/4);
  ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
  answer a;
  c.node(1).repl->add_member(4, address_of(4), keep(a));
  ASSERT_TRUE(c.run_until([&] { return a.done; }));
  ASSERT_TRUE(a.r) << a.r.err().reason;
  // Enough entries after it for group 0 to snapshot on node 3 and drop the entry itself.
  for (int i = 0; i < 12; ++i) c.node(1).repl->submit(0, std::vector<std::byte>{std::byte{1}});
  ASSERT_TRUE(c.run_until([&] {
    return c.agree_on(*a.r) && c.node(3).repl->snapshots_taken() >= 2 &&
           c.node(3).repl->status()[0].applied_index >= 14;
  }));
  // Restarted, node 3 knows the committed membership as soon as its snapshot is restored: before it
  // applies a single entry.
  c.stop(c.node(3));
  c.start(c.node(3));
  ASSERT_GE(c.node(3).repl->snapshots_restored(), 1u);
  const auto& restored = c.node(3).repl->committed_membership();
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(*restored, *a.r);
  EXPECT_TRUE(c.run_until([&] { return c.agree_on(*a.r); }));
}

TEST(replicator_membership, only_a_node_that_is_no_voter_of_group_0_adopts_a_membership_from_a_message) {
  membership_cluster c(31, 0, /*joining=*/true);
  ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
  // A membership group 0 never decided (epoch 9), as a message from node 1 to node 2 (a voter of group 0)
  // and to node 4 (started with --join: in no group's configuration).
  membership made_up = initial();
  made_up.epoch = 9;
  made_up.members.emplace(4, address_of(4));
  const std::vector<std::byte> message = encode(membership_update{made_up.epoch, made_up.members});
  c.node(1).links->send(2, 1, message);
  c.node(1).links->send(4, 1, message);
  ASSERT_TRUE(c.run_until([&] { return c.node(4).repl->desired_membership() == made_up; }, 2000))
      << "node 4 learns its peers from the message";
  EXPECT_EQ(c.node(2).repl->desired_membership().epoch, 0u) << "a voter of group 0 takes decisions only";
  EXPECT_FALSE(c.node(2).repl->committed_membership().has_value());
  EXPECT_FALSE(c.node(4).repl->committed_membership().has_value()) << "a message decides nothing";
  // A real change, through node 3, is decided from the bootstrap membership, whatever node 2 was told,
  // and node 2 acts on it.
  answer a;
  c.node(3).repl->add_member(4, address_of(4), keep(a));
  ASSERT_TRUE(c.run_until([&] { return a.done; }));
  ASSERT_TRUE(a.r) << a.r.err().reason;
  EXPECT_EQ(a.r->epoch, 1u);
  EXPECT_TRUE(c.run_until([&] { return c.node(2).repl->desired_membership() == *a.r; }));
}

// A removed node leaves every group and knows it left (replicator::left(): it then takes no request).
// It learns the decision that removed it from group 0 only while group 0 still has it (libraft stops
// sending to a server as soon as its removal is appended), so group 0 lets it go last, and the others
// send it a farewell (the decision) before they unlink it. Even seeds remove the leader of group 1 (it
// must hand the group over: without the first rule the group stayed led by it for good), odd seeds a
// node that leads no group and hears nothing from group 0's leader (it hears of its removal only from
// the others' messages: their periodic membership message, or the farewell before they unlink it).
TEST(replicator_membership, a_removed_node_leaves_every_group_and_knows_it_left) {
  int leaders = 0, others = 0;
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    membership_cluster c(seed, 0, /*joining=*/true, /*balance=*/true);
    ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
    answer added;
    c.node(1).repl->add_member(4, address_of(4), keep(added));
    ASSERT_TRUE(c.run_until([&] { return added.done; }));
    ASSERT_TRUE(added.r) << added.r.err().reason;
    ASSERT_TRUE(c.run_until([&] { return c.voters_are(*added.r); }, 30000)) << "node 4 joins every group";
    // Balanced, groups 0 and 1 end up led by nodes 1 and 2.
    c.run_until(
        [&] {
          const auto st = c.node(4).repl->status();
          return st[1].leader != 0 && st[0].leader != 0 && st[1].leader != st[0].leader;
        },
        30000);
    const auto st = c.node(4).repl->status();
    if (st[1].leader == 0 || st[1].leader == st[0].leader) continue;
    std::uint64_t leaving = st[1].leader;
    if (seed % 2 == 1) {
      for (std::uint64_t id = 1; id <= 4; ++id)
        if (id != st[0].leader && id != st[1].leader) leaving = id;
      c.net().set_link(raft::node_id(st[0].leader), raft::node_id(leaving), raft::link_faults{.drop = 1.0});
    }
    (seed % 2 == 0 ? leaders : others) += 1;
    const std::uint64_t via = leaving == 1 ? 2 : 1;
    ASSERT_FALSE(c.node(leaving).repl->left());
    answer removed;
    c.node(via).repl->remove_member(leaving, keep(removed));
    ASSERT_TRUE(c.run_until([&] { return removed.done; }));
    ASSERT_TRUE(removed.r) << removed.r.err().reason;
    EXPECT_TRUE(c.run_until([&] { return c.voters_are(*removed.r); }, 30000))
        << "node " << leaving << " still in a group's configuration";
    EXPECT_TRUE(c.run_until([&] { return c.node(leaving).repl->left(); }, 10000))
        << "node " << leaving << " does not know it left";
    for (std::uint64_t id = 1; id <= 4; ++id) {
      if (id == leaving) continue;
      EXPECT_FALSE(c.node(id).repl->left()) << "node " << id;
    }
  }
  std::printf("removed the leader of a group in %d seeds, a node leading none in %d\n", leaders, others);
  EXPECT_GE(leaders, 3);
  EXPECT_GE(others, 3);
}

// A node down through its removal starts again in no configuration: the others refuse its links (as
// peer_links does a node that is not its peer), and nothing of group 0 reaches it. A member it knocks at
// finds it among the nodes group 0 removed (departures), links to it again and sends it the decision, so it
// knows it left. Node 4, started with --join and not added yet, knocks too: it was never removed, and is
// told nothing (it then joins normally once added). Even seeds remove node 3 from the bootstrap membership
// (epoch 0: the first change through raft), odd ones after a first change (node 4 added, then 3 removed);
// in half the seeds the members restart from group 0 snapshots taken after the removal, so the departures
// come through the snapshot.
TEST(replicator_membership, a_node_removed_while_down_learns_it_left_when_it_starts_again) {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    const bool first_add = seed % 2 == 1;
    membership_cluster c(seed, seed % 4 < 2 ? 0 : 4, /*joining=*/true, /*balance=*/false, /*peer_only=*/true);
    ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
    membership before = initial();
    if (first_add) {
      answer added;
      c.node(1).repl->add_member(4, address_of(4), keep(added));
      ASSERT_TRUE(c.run_until([&] { return added.done; }));
      ASSERT_TRUE(added.r) << added.r.err().reason;
      ASSERT_TRUE(c.run_until([&] { return c.voters_are(*added.r); }, 30000));
      before = *added.r;
    }
    c.stop(c.node(3));
    answer removed;
    c.node(1).repl->remove_member(3, keep(removed));
    ASSERT_TRUE(c.run_until([&] { return removed.done; }));
    ASSERT_TRUE(removed.r) << removed.r.err().reason;
    ASSERT_TRUE(c.run_until([&] { return c.voters_are(*removed.r); }, 30000));
    // Every member forgot the incarnation of node 3's directory: it may join again on a new one
    // (docs/replication.md, "A node that lost its data directory"); no other node's.
    for (std::uint64_t id : {1, 2}) {
      EXPECT_EQ(c.node(id).peer_only->forgotten, std::set<std::uint64_t>{3}) << "node " << id;
    }
    if (seed % 4 >= 2) {
      // Group 0 snapshots past the removal, and the members restart from their snapshots: the departures
      // are the snapshot's (the removal's entry is gone from the log).
      for (int i = 0; i < 12; ++i) c.node(1).repl->submit(0, std::vector<std::byte>{std::byte{1}});
      ASSERT_TRUE(c.run_until(
          [&] { return c.node(1).repl->snapshots_taken() >= 2 && c.node(2).repl->snapshots_taken() >= 2; }));
      for (std::uint64_t id : {1, 2}) {
        c.stop(c.node(id));
        c.start(c.node(id));
        EXPECT_GE(c.node(id).repl->snapshots_restored(), 1u) << "node " << id;
      }
      ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
    }
    // Every member has unlinked node 3 (its farewells went nowhere; a restarted member links the nodes
    // it was started with again, then unlinks them).
    ASSERT_TRUE(c.run_until(
        [&] {
          for (std::uint64_t id : {1, 2})
            if (c.node(id).repl->peer_addresses().contains(3)) return false;
          return true;
        },
        10000));
    c.start(c.node(3));
    EXPECT_FALSE(c.node(3).repl->left()) << "before anyone told it";
    EXPECT_TRUE(c.run_until([&] { return c.node(3).repl->left(); }, 20000)) << "node 3 does not know it left";
    std::uint64_t refused = 0;
    for (std::uint64_t id : {1, 2, 4}) refused += c.node(id).peer_only->refused[3];
    EXPECT_GT(refused, 0u) << "node 3 was refused";
    for (std::uint64_t id : {1, 2, 4}) EXPECT_FALSE(c.node(id).repl->left()) << "node " << id;
    if (!first_add) {
      // Node 4 knocked all along (it dials the members it was started with) and was refused, never told it
      // left; added now, it joins every group.
      EXPECT_GT(c.node(1).peer_only->refused[4] + c.node(2).peer_only->refused[4], 0u);
      answer added;
      c.node(2).repl->add_member(4, address_of(4), keep(added));
      ASSERT_TRUE(c.run_until([&] { return added.done; }));
      ASSERT_TRUE(added.r) << added.r.err().reason;
      EXPECT_TRUE(c.run_until([&] { return c.voters_are(*added.r); }, 30000)) << "node 4 joins";
      EXPECT_FALSE(c.node(4).repl->left());
    }
  }
}

// A member down through a removal forgets the removed node's incarnation when it comes back and adopts
// the membership without it, though group 0 snapshotted past the removal's entry. (One down through both
// a removal and the re-adding of the same id keeps the old one: docs/replication.md, "What a cluster does
// not do yet".)
TEST(replicator_membership, a_member_down_through_a_removal_forgets_the_removed_nodes_incarnation) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    membership_cluster c(seed, 4, /*joining=*/true, /*balance=*/false, /*peer_only=*/true);
    ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
    answer added;
    c.node(1).repl->add_member(4, address_of(4), keep(added));
    ASSERT_TRUE(c.run_until([&] { return added.done; }));
    ASSERT_TRUE(added.r) << added.r.err().reason;
    ASSERT_TRUE(c.run_until([&] { return c.voters_are(*added.r); }, 30000));
    c.stop(c.node(2));
    answer removed;
    c.node(1).repl->remove_member(3, keep(removed));
    ASSERT_TRUE(c.run_until([&] { return removed.done; }));
    ASSERT_TRUE(removed.r) << removed.r.err().reason;
    // Group 0 snapshots past the removal on the nodes that are up.
    for (int i = 0; i < 12; ++i) c.node(1).repl->submit(0, std::vector<std::byte>{std::byte{1}});
    ASSERT_TRUE(c.run_until([&] { return c.node(1).repl->snapshots_taken() >= 2; }));
    c.start(c.node(2));
    EXPECT_FALSE(c.node(2).peer_only->forgotten.contains(3)) << "before it learnt of the removal";
    EXPECT_TRUE(c.run_until([&] { return c.node(2).peer_only->forgotten.contains(3); }, 20000))
        << "node 2 still remembers node 3's incarnation";
    EXPECT_FALSE(c.node(2).peer_only->forgotten.contains(4));
  }
}

// A node started with --join whose addition is not committed knocks at every member, which refuse it: it
// was never a member, so nobody tells it it left, and it keeps waiting to be added.
TEST(replicator_membership, a_node_not_added_yet_is_never_told_it_left) {
  membership_cluster c(3, 0, /*joining=*/true, /*balance=*/false, /*peer_only=*/true);
  ASSERT_TRUE(c.run_until([&] { return c.every_group_led(); }));
  // A change through raft, so that group 0 has decided something and keeps a departure: node 3 out.
  answer out;
  c.node(1).repl->remove_member(3, keep(out));
  ASSERT_TRUE(c.run_until([&] { return out.done; }));
  ASSERT_TRUE(out.r) << out.r.err().reason;
  ASSERT_TRUE(c.run_until([&] { return c.voters_are(*out.r); }, 30000));
  const std::uint64_t refused_before = c.node(1).peer_only->refused[4] + c.node(2).peer_only->refused[4];
  c.sched().run_until(c.sched().now_ms() + 20000);
  EXPECT_GT(c.node(1).peer_only->refused[4] + c.node(2).peer_only->refused[4], refused_before)
      << "node 4 knocked";
  for (std::uint64_t id : {1, 2, 4}) EXPECT_FALSE(c.node(id).repl->left()) << "node " << id;
  EXPECT_EQ(c.node(4).repl->desired_membership().epoch, 0u) << "and nothing was sent to it";
  EXPECT_TRUE(c.node(3).repl->left()) << "node 3, removed while up, knows";
}

}  // namespace
}  // namespace weir::cluster
