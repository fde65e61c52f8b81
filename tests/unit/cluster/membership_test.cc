#include "cluster/membership.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "cluster/cluster_options.h"
#include "cluster/messages.h"
#include "storage/mem_env.h"

namespace weir::cluster {
namespace {

const std::string dir = "/data/node-1/raft";
const std::string path = dir + "/members";

membership three() {
  return membership{0, {{1, "10.0.0.1:5437"}, {2, "10.0.0.2:5437"}, {3, "10.0.0.3:5437"}}};
}

std::string text_of(const storage::mem_env& e, const std::string& p) {
  auto bytes = e.contents(p);
  if (!bytes) return "<missing>";
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

void put(storage::mem_env& e, const std::string& p, const std::string& text) {
  std::vector<std::byte> bytes(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) bytes[i] = static_cast<std::byte>(text[i]);
  e.set_contents(p, std::move(bytes));
}

TEST(membership, adding_and_removing_make_the_next_epoch) {
  auto added = with_member(three(), 4, " 10.0.0.4:5437 ");
  ASSERT_TRUE(added) << added.err().reason;
  EXPECT_EQ(added->epoch, 1u);
  EXPECT_EQ(added->members.at(4), "10.0.0.4:5437");
  EXPECT_EQ(added->members.size(), 4u);

  auto removed = without_member(*added, 3);
  ASSERT_TRUE(removed) << removed.err().reason;
  EXPECT_EQ(removed->epoch, 2u);
  EXPECT_FALSE(removed->members.contains(3));

  // A re-post of a member at its address: the same members, a new epoch (it reaches who missed it).
  auto again = with_member(*removed, 4, "10.0.0.4:5437");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->epoch, 3u);
  EXPECT_EQ(again->members, removed->members);
}

TEST(membership, changes_that_cannot_be_made_are_refused_with_the_reason) {
  auto refused = [](result<membership> r) {
    EXPECT_FALSE(r);
    if (r) return std::string();
    EXPECT_EQ(r.err().as<membership_errc>(), membership_errc::invalid);
    return r.err().reason;
  };
  EXPECT_EQ(refused(with_member(three(), 0, "10.0.0.4:5437")), "id: node ids start at 1");
  EXPECT_EQ(refused(with_member(three(), 4, "")).rfind("address: expected HOST:PORT", 0), 0u);
  EXPECT_EQ(refused(with_member(three(), 4, "10.0.0.4")).rfind("address: expected HOST:PORT", 0), 0u);
  EXPECT_EQ(refused(with_member(three(), 4, "node4.example:5437")).rfind("address: an IPv4 address", 0), 0u);
  EXPECT_EQ(refused(with_member(three(), 4, "10.0.0.4:0")), "address: port 0");
  EXPECT_EQ(refused(with_member(three(), 4, "10.0.0.2:5437")), "address 10.0.0.2:5437 is node 2's");
  EXPECT_EQ(refused(with_member(three(), 3, "10.0.0.9:5437")).rfind("node 3 is a member at 10.0.0.3:5437", 0),
            0u);
  membership seven = three();
  for (std::uint64_t id = 4; id <= max_nodes; ++id) seven.members[id] = "10.0.0." + std::to_string(id) + ":1";
  EXPECT_EQ(refused(with_member(seven, 8, "10.0.0.8:1")).rfind("a cluster has at most 7 nodes", 0), 0u);
  EXPECT_EQ(refused(without_member(three(), 9)), "node 9 is not a member (members: 1, 2, 3)");
  EXPECT_EQ(refused(without_member(membership{4, {{1, "10.0.0.1:1"}}}, 1)), "node 1 is the last member");
}

TEST(membership, a_higher_epoch_supersedes_and_equal_epochs_settle_on_one_list) {
  membership a = three(), b = three();
  a.epoch = 2;
  b.epoch = 1;
  EXPECT_TRUE(supersedes(a, b));
  EXPECT_FALSE(supersedes(b, a));
  b.epoch = 2;
  EXPECT_FALSE(supersedes(a, b));  // the same: neither
  b.members.erase(3);
  EXPECT_NE(supersedes(a, b), supersedes(b, a));  // two changes at one epoch: both nodes pick one
}

TEST(membership, a_peers_membership_is_checked) {
  EXPECT_TRUE(check_membership(membership{}));
  EXPECT_TRUE(check_membership(three()));
  EXPECT_FALSE(check_membership(membership{3, {}}));
  EXPECT_FALSE(check_membership(membership{3, {{0, "10.0.0.1:1"}}}));
  EXPECT_FALSE(check_membership(membership{3, {{1, "10.0.0.1"}}}));
  EXPECT_FALSE(check_membership(membership{3, {{1, " 10.0.0.1:1"}}}));  // not as a node writes it
  EXPECT_FALSE(check_membership(membership{3, {{1, "10.0.0.1:1,2=x:1"}}}));
  EXPECT_FALSE(check_membership(membership{3, {{1, "10.0.0.1:1"}, {2, "10.0.0.1:1"}}}));
}

TEST(membership, the_file_round_trips_and_a_damaged_one_is_named) {
  storage::mem_env e;
  ASSERT_TRUE(e.create_dirs(dir));
  auto none = load_membership(e, path);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);

  membership m = *with_member(three(), 4, "10.0.0.4:5437");
  ASSERT_TRUE(store_membership(e, path, m));
  EXPECT_EQ(text_of(e, path),
            "# weir: the membership this cluster was asked to have (docs/operations.md, \"Cluster\")\n"
            "epoch = 1\n"
            "members = 1=10.0.0.1:5437,2=10.0.0.2:5437,3=10.0.0.3:5437,4=10.0.0.4:5437\n");
  auto back = load_membership(e, path);
  ASSERT_TRUE(back && *back);
  EXPECT_EQ(**back, m);

  // What a node started with --join writes before it knows the cluster.
  ASSERT_TRUE(store_membership(e, path, membership{}));
  back = load_membership(e, path);
  ASSERT_TRUE(back && *back);
  EXPECT_EQ(**back, membership{});

  // Durable: a crash right after the store keeps it.
  ASSERT_TRUE(store_membership(e, path, m));
  e.crash();
  e.restart();
  back = load_membership(e, path);
  ASSERT_TRUE(back && *back);
  EXPECT_EQ(**back, m);

  for (const char* bad : {"epoch = 1\n", "members = 1=10.0.0.1:1\n", "epoch = x\nmembers = 1=10.0.0.1:1\n",
                          "epoch = 1\nmembers = 1=10.0.0.1:1\nepoch = 2\n", "epoch = 1\nmembers = \n",
                          "epoch = 1\nmembers = 1=name:1\n", "hello\n"}) {
    put(e, path, bad);
    auto r = load_membership(e, path);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.err().as<membership_errc>(), membership_errc::corrupt) << bad;
    EXPECT_EQ(r.err().reason.rfind("members file " + path + ": ", 0), 0u) << r.err().reason;
  }
}

TEST(membership, a_failed_sync_is_an_error_and_keeps_the_old_file) {
  storage::mem_env e;
  ASSERT_TRUE(e.create_dirs(dir));
  membership m = three();
  m.epoch = 1;
  ASSERT_TRUE(store_membership(e, path, m));
  e.fail_next_syncs(1);
  auto st = store_membership(e, path, *without_member(m, 3));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.err().as<membership_errc>(), membership_errc::io_error);
  auto back = load_membership(e, path);
  ASSERT_TRUE(back && *back);
  EXPECT_EQ(**back, m);
}

// The channel 1 message that carries it: canonical (ids increasing from 1, addresses not empty).
TEST(membership, the_message_round_trips_and_decoding_is_canonical) {
  membership_update u{7, {{1, "10.0.0.1:5437"}, {4, "10.0.0.4:5437"}}};
  const auto bytes = encode(u);
  auto back = decode(bytes);
  ASSERT_TRUE(back);
  auto* got = std::get_if<membership_update>(&*back);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->epoch, 7u);
  EXPECT_EQ(got->members, u.members);
  EXPECT_EQ(encode(*back), bytes);

  // Swapping the two members (ids 4, then 1) makes a list no node encodes: refused.
  const std::size_t first = 1 + 8 + 2, second = first + 8 + 2 + 13;
  std::vector<std::byte> swapped(bytes.begin(), bytes.begin() + first);
  swapped.insert(swapped.end(), bytes.begin() + second, bytes.end());
  swapped.insert(swapped.end(), bytes.begin() + first, bytes.begin() + second);
  ASSERT_EQ(swapped.size(), bytes.size());
  EXPECT_FALSE(decode(swapped));
  // Truncated anywhere, or with a byte more: refused.
  for (std::size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(decode(std::span(bytes.data(), n))) << n;
  auto longer = bytes;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode(longer));
  // No members at epoch 0 encodes and decodes (the checks on content are check_membership's).
  auto empty = decode(encode(membership_update{}));
  ASSERT_TRUE(empty);
  EXPECT_TRUE(std::get<membership_update>(*empty).members.empty());
}

}  // namespace
}  // namespace weir::cluster
