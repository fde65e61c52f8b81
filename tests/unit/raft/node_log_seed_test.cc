// raft::seed_node_log: a node log written before the node runs holds, per group, its term and an
// installed snapshot, which the log recovers as it would one the group took; a log that exists already is
// left alone (an error).
#include "raft/node_log_seed.h"

#include <gtest/gtest.h>

#include "raft/node_log.h"
#include "storage/mem_env.h"
#include "support/sim/delayed_flusher.h"
#include "support/sim/sim_scheduler.h"

namespace weir::raft {
namespace {

std::vector<std::byte> bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span<const char>(s.data(), s.size()));
  return {b.begin(), b.end()};
}

TEST(raft_node_log_seed, every_group_starts_from_its_snapshot) {
  storage::mem_env env;
  const auto one = bytes_of("state of group 1");
  const auto three = bytes_of("state of group 3");
  const std::vector<wire::server> conf = {{node_id(1), 1, "127.0.0.1:7001"},
                                          {node_id(2), 1, "127.0.0.1:7002"},
                                          {node_id(3), 1, "127.0.0.1:7003"}};
  auto st = seed_node_log(env, "/data/raft/node.log",
                          {seeded_group{group_id(1), log_index(420), term_id(7), conf, one},
                           seeded_group{group_id(3), log_index(9), term_id(2), conf, three}});
  ASSERT_TRUE(st.has_value()) << st.err().reason;

  sim_scheduler sched{1};
  sim_executor ex(sched);
  delayed_flusher flusher(ex, [] { return std::chrono::milliseconds(1); });
  auto log = node_log::open(env, flusher, "/data/raft/node.log");
  ASSERT_TRUE(log.has_value()) << log.err().reason;
  group_state g1 = (*log)->take_group_state(group_id(1));
  EXPECT_EQ(g1.term, term_id(7));
  ASSERT_TRUE(g1.snapshot.has_value());
  EXPECT_EQ(g1.snapshot->index, log_index(420));
  EXPECT_EQ(g1.snapshot->term, term_id(7));
  EXPECT_EQ(g1.snapshot->conf_index, log_index(420));
  EXPECT_EQ(g1.snapshot->data, one);
  EXPECT_TRUE(g1.entries.empty());
  EXPECT_EQ(g1.next_index(), log_index(421));
  std::vector<std::byte> conf_bytes;
  byte_writer w(conf_bytes);
  wire::encode_servers(conf, w);
  EXPECT_EQ(g1.snapshot->conf, conf_bytes);
  group_state g3 = (*log)->take_group_state(group_id(3));
  ASSERT_TRUE(g3.snapshot.has_value());
  EXPECT_EQ(g3.snapshot->index, log_index(9));
  EXPECT_EQ(g3.snapshot->data, three);
  EXPECT_FALSE((*log)->take_group_state(group_id(2)).snapshot.has_value());
}

}  // namespace
}  // namespace weir::raft
