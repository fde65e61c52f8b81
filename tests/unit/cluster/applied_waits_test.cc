#include "cluster/applied_waits.h"

#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "support/sim/sim_scheduler.h"

namespace weir::cluster {
namespace {

using std::chrono::milliseconds;
using position = applied_waits::position;

// A chain over a fixed list of positions, as a fork's ancestry gives them.
applied_waits::next_fn chain_of(std::vector<position> links) {
  return [links = std::move(links), i = std::size_t{0}]() mutable -> std::optional<position> {
    if (i == links.size()) return std::nullopt;
    return links[i++];
  };
}

struct fixture {
  raft::sim_scheduler sched{1};
  raft::sim_executor ex{sched};
  applied_waits waits{ex, 4, milliseconds(5000)};
  std::optional<bool> result;
  std::function<void(bool)> record() {
    return [this](bool ok) { result = ok; };
  }
};

TEST(applied_waits, a_chain_already_reached_ends_at_once_but_not_inside_the_call) {
  fixture f;
  f.waits.applied(1, 10);
  f.waits.wait_chain(chain_of({{1, 10}, {1, 3}}), f.record());
  EXPECT_FALSE(f.result.has_value());
  f.sched.run_until(0);
  EXPECT_EQ(f.result, std::optional<bool>(true));
  EXPECT_EQ(f.waits.waiting(), 0u);
}

TEST(applied_waits, waits_for_each_link_in_turn) {
  fixture f;
  int asked = 0;
  // The second link is known only once the first one's group caught up (a fork of a fork).
  f.waits.wait_chain(
      [&]() -> std::optional<position> {
        ++asked;
        if (asked == 1) return position{2, 7};
        if (asked == 2)
          return f.waits.applied_index(2) >= 7 ? std::optional<position>(position{3, 4}) : std::nullopt;
        return std::nullopt;
      },
      f.record());
  f.sched.run_until(1);
  EXPECT_EQ(asked, 1);
  f.waits.applied(2, 6);
  f.waits.applied(3, 9);  // the second group is ahead already
  f.sched.run_until(2);
  EXPECT_FALSE(f.result.has_value());
  f.waits.applied(2, 7);
  EXPECT_FALSE(f.result.has_value());  // not from inside applied()
  f.sched.run_until(3);
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(f.result, std::optional<bool>(true));
}

TEST(applied_waits, times_out_when_the_group_stays_behind_and_forgets_the_chain) {
  fixture f;
  f.waits.wait_chain(chain_of({{0, 5}}), f.record());
  f.waits.applied(0, 4);
  f.sched.run_until(4999);
  EXPECT_FALSE(f.result.has_value());
  f.sched.run_until(5000);
  EXPECT_EQ(f.result, std::optional<bool>(false));
  EXPECT_EQ(f.waits.waiting(), 0u);
  f.waits.applied(0, 5);  // nothing left to wake
  f.sched.run_until(6000);
  EXPECT_EQ(f.result, std::optional<bool>(false));
}

TEST(applied_waits, an_index_never_goes_back_and_unknown_groups_count_as_reached) {
  fixture f;
  f.waits.applied(1, 9);
  f.waits.applied(1, 3);  // a restore below what was applied does not move it back
  EXPECT_EQ(f.waits.applied_index(1), 9u);
  f.waits.wait_chain(chain_of({{1, 9}, {17, 1}}), f.record());
  f.sched.run_until(0);
  EXPECT_EQ(f.result, std::optional<bool>(true));
}

TEST(applied_waits, nothing_runs_once_it_is_gone) {
  raft::sim_scheduler sched{1};
  raft::sim_executor ex{sched};
  bool called = false;
  {
    applied_waits waits{ex, 2, milliseconds(100)};
    waits.wait_chain(chain_of({{0, 5}}), [&](bool) { called = true; });
    sched.run_until(1);
  }
  sched.run_until(1000);
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace weir::cluster
