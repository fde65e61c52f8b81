#include "cluster/cluster_identity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage/mem_env.h"

namespace weir::cluster {
namespace {

const std::string dir = "/data/node-1";

cluster_options node(std::uint64_t id, std::uint32_t groups = 64) {
  cluster_options o;
  o.node_id = id;
  o.groups = groups;
  return o;  // claim_identity looks at node_id, groups and lanes only
}

std::string text_of(const storage::mem_env& e, const std::string& path) {
  auto bytes = e.contents(path);
  if (!bytes) return "<missing>";
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

void put(storage::mem_env& e, const std::string& path, const std::string& text) {
  std::vector<std::byte> bytes(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) bytes[i] = static_cast<std::byte>(text[i]);
  e.set_contents(path, std::move(bytes));
}

// Every new identity of these tests gets incarnation 77 (random in production).
constexpr std::uint64_t fresh = 77;
result<cluster_identity> claim(storage::env& e, const std::string& data_dir, const cluster_options& o) {
  return claim_identity(e, data_dir, o, fresh);
}

identity_errc code_of(const error& e) {
  return e.as<identity_errc>();
}

TEST(cluster_identity, the_first_start_writes_the_file_and_later_starts_read_it) {
  storage::mem_env e;
  auto first = claim(e, dir, node(1));
  ASSERT_TRUE(first) << first.err().reason;
  EXPECT_EQ(*first, (cluster_identity{1, 64, 1, true, fresh}));
  EXPECT_TRUE(is_cluster_dir(e, dir));
  EXPECT_EQ(text_of(e, dir + "/cluster"),
            "# weir: this data directory belongs to a node of a cluster (docs/operations.md, \"Cluster\")\n"
            "node-id = 1\ngroups = 64\nincarnation = 77\n");
  EXPECT_FALSE(e.file_exists(dir + "/cluster.tmp"));

  auto again = claim(e, dir, node(1));
  ASSERT_TRUE(again) << again.err().reason;
  EXPECT_EQ(*again, (cluster_identity{1, 64, 1, false, fresh}));
}

TEST(cluster_identity, the_file_survives_a_crash_right_after_the_claim) {
  storage::mem_env e;
  ASSERT_TRUE(claim(e, dir, node(3, 16)));
  e.crash();
  e.restart();
  auto after = claim(e, dir, node(3, 16));
  ASSERT_TRUE(after) << after.err().reason;
  EXPECT_EQ(*after, (cluster_identity{3, 16, 1, false, fresh}));
}

TEST(cluster_identity, another_node_id_or_group_count_is_refused_naming_both) {
  storage::mem_env e;
  ASSERT_TRUE(claim(e, dir, node(1)));
  auto other_node = claim(e, dir, node(2));
  ASSERT_FALSE(other_node);
  EXPECT_EQ(code_of(other_node.err()), identity_errc::mismatch);
  EXPECT_EQ(other_node.err().reason.rfind("data directory /data/node-1 belongs to node 1 of a cluster with "
                                          "64 groups; started with --node-id 2 (",
                                          0),
            0u)
      << other_node.err().reason;

  auto other_groups = claim(e, dir, node(1, 32));
  ASSERT_FALSE(other_groups);
  EXPECT_EQ(code_of(other_groups.err()), identity_errc::mismatch);
  EXPECT_NE(other_groups.err().reason.find("64 groups; started with --raft-groups 32"), std::string::npos)
      << other_groups.err().reason;

  auto both = claim(e, dir, node(2, 32));
  ASSERT_FALSE(both);
  EXPECT_NE(both.err().reason.find("started with --node-id 2 --raft-groups 32"), std::string::npos);
  // Nothing was rewritten.
  EXPECT_NE(text_of(e, dir + "/cluster").find("node-id = 1\ngroups = 64\n"), std::string::npos);
}

TEST(cluster_identity, the_lane_count_is_recorded_and_fixed) {
  storage::mem_env e;
  cluster_options two = node(1);
  two.lanes = 2;
  auto first = claim(e, dir, two);
  ASSERT_TRUE(first) << first.err().reason;
  EXPECT_EQ(*first, (cluster_identity{1, 64, 2, true, fresh}));
  EXPECT_NE(text_of(e, dir + "/cluster").find("groups = 64\nlanes = 2\nincarnation = 77\n"),
            std::string::npos);
  auto one = claim(e, dir, node(1));
  ASSERT_FALSE(one);
  EXPECT_EQ(code_of(one.err()), identity_errc::mismatch);
  EXPECT_NE(one.err().reason.find("64 groups in 2 lanes; started with --raft-lanes 1"), std::string::npos)
      << one.err().reason;
  auto again = claim(e, dir, two);
  ASSERT_TRUE(again) << again.err().reason;
  EXPECT_EQ(*again, (cluster_identity{1, 64, 2, false, fresh}));
  // A directory of one lane has no lanes line (older nodes read it as before).
  ASSERT_TRUE(claim(e, "/data/node-2", node(2)));
  EXPECT_EQ(text_of(e, "/data/node-2/cluster").find("lanes"), std::string::npos);
}

TEST(cluster_identity, a_single_node_directory_is_refused_in_cluster_mode) {
  storage::mem_env e;
  ASSERT_TRUE(e.create_dirs(dir + "/wal/core-0"));
  auto r = claim(e, dir, node(1));
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.err()), identity_errc::wrong_mode);
  EXPECT_NE(r.err().reason.find("holds a single-node weir's data (/data/node-1/wal)"), std::string::npos)
      << r.err().reason;
  EXPECT_FALSE(is_cluster_dir(e, dir));
  // Alone it still runs there.
  auto alone = claim(e, dir, cluster_options{});
  ASSERT_TRUE(alone);
  EXPECT_EQ(*alone, cluster_identity{});
}

TEST(cluster_identity, a_cluster_directory_is_refused_in_single_node_mode) {
  storage::mem_env e;
  ASSERT_TRUE(claim(e, dir, node(2, 8)));
  auto r = claim(e, dir, cluster_options{});
  ASSERT_FALSE(r);
  EXPECT_EQ(code_of(r.err()), identity_errc::wrong_mode);
  EXPECT_EQ(r.err().reason.rfind("data directory /data/node-1 belongs to node 2 of a cluster with 8 groups: "
                                 "start it as that node (--node-id 2 --raft-groups 8",
                                 0),
            0u)
      << r.err().reason;
}

TEST(cluster_identity, single_node_mode_writes_nothing) {
  storage::mem_env e;
  auto alone = claim(e, dir, cluster_options{});
  ASSERT_TRUE(alone);
  EXPECT_EQ(*alone, cluster_identity{});
  EXPECT_FALSE(is_cluster_dir(e, dir));
  EXPECT_FALSE(e.file_exists(dir));
}

TEST(cluster_identity, a_damaged_file_is_an_error_not_a_new_identity) {
  storage::mem_env e;
  ASSERT_TRUE(e.create_dirs(dir));
  for (const char* text :
       {"", "node-id = 1\n", "groups = 64\n", "node-id = x\ngroups = 64\n",
        "node-id = 1\ngroups = 64\ncolour = 3\n", "node-id = 1\nnode-id = 2\ngroups = 64\n",
        "node-id = 0\ngroups = 64\n", "node-id = 1\ngroups = 0\n", "node-id 1\ngroups = 64\n",
        "node-id = 1\ngroups = 64\nincarnation = 0\n", "node-id = 1\ngroups = 64\nincarnation = -3\n",
        "node-id = 1\ngroups = 64\nincarnation = 5\nincarnation = 6\n"}) {
    put(e, dir + "/cluster", text);
    auto r = claim(e, dir, node(1));
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(code_of(r.err()), identity_errc::corrupt) << text;
    EXPECT_NE(r.err().reason.find("cluster identity /data/node-1/cluster: "), std::string::npos)
        << r.err().reason;
    EXPECT_FALSE(claim(e, dir, cluster_options{})) << text;  // still a cluster directory
  }
  put(e, dir + "/cluster", "\n# written by hand\r\n  node-id=1  \r\ngroups =64");
  auto r = claim(e, dir, node(1));
  ASSERT_TRUE(r) << r.err().reason;
  EXPECT_EQ(*r, (cluster_identity{1, 64, 1, false, fresh}));
}

TEST(cluster_identity, a_failed_write_leaves_no_identity_and_the_next_start_writes_it) {
  storage::mem_env e;
  e.fail_next_syncs(1);
  auto failed = claim(e, dir, node(1));
  ASSERT_FALSE(failed);
  EXPECT_EQ(code_of(failed.err()), identity_errc::io_error);
  EXPECT_FALSE(is_cluster_dir(e, dir));
  EXPECT_TRUE(e.file_exists(dir + "/cluster.tmp"));  // as a crash would leave it
  auto retried = claim(e, dir, node(1));
  ASSERT_TRUE(retried) << retried.err().reason;
  EXPECT_TRUE(retried->created);
  EXPECT_FALSE(e.file_exists(dir + "/cluster.tmp"));
}

// A file written before incarnations existed gets one at its next start, written to the file; from then
// on every start reads that one (a peer remembers it: docs/replication.md, "A node that lost its data
// directory").
TEST(cluster_identity, a_file_without_an_incarnation_gets_one_at_the_next_start) {
  storage::mem_env e;
  ASSERT_TRUE(e.create_dirs(dir));
  put(e, dir + "/cluster", "node-id = 1\ngroups = 64\nlanes = 2\n");
  cluster_options two = node(1);
  two.lanes = 2;
  auto first = claim_identity(e, dir, two, 1234);
  ASSERT_TRUE(first) << first.err().reason;
  EXPECT_EQ(*first, (cluster_identity{1, 64, 2, false, 1234}));
  EXPECT_NE(text_of(e, dir + "/cluster").find("lanes = 2\nincarnation = 1234\n"), std::string::npos);
  e.crash();  // written durably
  e.restart();
  auto again = claim_identity(e, dir, two, 999);
  ASSERT_TRUE(again) << again.err().reason;
  EXPECT_EQ(again->incarnation, 1234u);
}

TEST(cluster_identity, each_new_directory_gets_a_random_incarnation) {
  storage::mem_env e;
  auto a = claim_identity(e, "/data/a", node(1));
  auto b = claim_identity(e, "/data/b", node(1));
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->incarnation, 0u);
  EXPECT_NE(b->incarnation, 0u);
  EXPECT_NE(a->incarnation, b->incarnation);  // 2^-64 to fail by chance
}

TEST(cluster_identity, format_and_parse_are_inverses) {
  for (cluster_identity id :
       {cluster_identity{1, 1}, cluster_identity{7, 4096}, cluster_identity{1ull << 40, 64},
        cluster_identity{2, 64, 4}, cluster_identity{2, 64, 4, false, ~0ull},
        cluster_identity{3, 8, 1, false, 1}}) {
    auto back = parse_identity(format_identity(id));
    ASSERT_TRUE(back) << back.err().reason;
    EXPECT_EQ(*back, id);
  }
}

}  // namespace
}  // namespace weir::cluster
