// The membership change as group 0's log carries it (cluster/membership.h): its codec, and the apply rule
// every node runs on it in log order (apply_change). The replicator's use of both, with real raft groups,
// is replicator_membership_test.cc.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cluster/membership.h"

namespace weir::cluster {
namespace {

using op = membership_change::op;

membership three() {
  return membership{0, {{1, "10.0.0.1:5437"}, {2, "10.0.0.2:5437"}, {3, "10.0.0.3:5437"}}};
}

membership_change add(std::uint64_t id, std::string address, membership base) {
  return membership_change{op::add, id, std::move(address), std::move(base)};
}

membership_change remove(std::uint64_t id, membership base) {
  return membership_change{op::remove, id, {}, std::move(base)};
}

membership_errc errc_of(const result<membership>& r) {
  return r ? membership_errc{} : r.err().as<membership_errc>();
}

TEST(membership_change, round_trips_and_decoding_is_canonical) {
  membership later = three();
  later.epoch = 7;
  for (const membership_change& c : {add(4, "10.0.0.4:5437", three()), remove(2, later),
                                     remove(9, membership{}), add(1, "localhost:1", later)}) {
    const std::vector<std::byte> bytes = encode_membership_change(c);
    auto d = decode_membership_change(bytes);
    ASSERT_TRUE(d) << d.err().reason;
    EXPECT_EQ(*d, c);
    EXPECT_EQ(encode_membership_change(*d), bytes);
    // Every prefix is refused, and so is a byte more.
    for (std::size_t n = 0; n < bytes.size(); ++n)
      EXPECT_FALSE(decode_membership_change(std::span(bytes).first(n))) << n;
    std::vector<std::byte> longer = bytes;
    longer.push_back(std::byte{0});
    EXPECT_FALSE(decode_membership_change(longer));
  }
}

TEST(membership_change, malformed_changes_are_refused) {
  const std::vector<std::byte> good = encode_membership_change(add(4, "10.0.0.4:5437", three()));
  auto with = [&](std::size_t at, std::uint8_t value) {
    std::vector<std::byte> b = good;
    b[at] = std::byte{value};
    return decode_membership_change(b);
  };
  EXPECT_FALSE(with(0, 0));  // no such operation
  EXPECT_FALSE(with(0, 3));
  // An id of 0 (the id is bytes 1..8).
  std::vector<std::byte> zero = good;
  for (std::size_t i = 1; i <= 8; ++i) zero[i] = std::byte{0};
  EXPECT_FALSE(decode_membership_change(zero));
  // A removal that names an address, an addition that names none.
  EXPECT_FALSE(with(0, static_cast<std::uint8_t>(op::remove)));
  EXPECT_FALSE(decode_membership_change(encode_membership_change(add(4, "", three()))));
  // The base's member ids must increase: node 2 written where node 1 is.
  const std::vector<std::byte> ordered = encode_membership_change(remove(3, three()));
  std::vector<std::byte> unordered = ordered;
  const std::size_t first_id = 1 + 8 + 2 + 8 + 2;  // op, id, empty address, epoch, count
  unordered[first_id] = std::byte{2};
  EXPECT_TRUE(decode_membership_change(ordered));
  EXPECT_FALSE(decode_membership_change(unordered));
}

TEST(membership_change, the_membership_codec_round_trips) {
  membership m = three();
  m.epoch = 12;
  for (const membership& x : {m, membership{}}) {
    const auto bytes = encode_membership(x);
    auto d = decode_membership(bytes);
    ASSERT_TRUE(d) << d.err().reason;
    EXPECT_EQ(*d, x);
    for (std::size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(decode_membership(std::span(bytes).first(n)));
  }
}

// What group 0 decided, as its snapshot carries it: the membership, then the departures when there are
// any. Without departures the bytes are encode_membership's (snapshots of older versions read alike).
TEST(membership_change, the_decided_membership_codec_round_trips) {
  decided_membership none{three(), {}};
  decided_membership some{three(), {{4, {3, "10.0.0.4:5437"}}, {9, {5, "localhost:9"}}}};
  EXPECT_EQ(encode_decided(none), encode_membership(three()));
  for (const decided_membership& x : {none, some}) {
    const auto bytes = encode_decided(x);
    auto d = decode_decided(bytes);
    ASSERT_TRUE(d) << d.err().reason;
    EXPECT_EQ(*d, x);
    const std::size_t whole_membership = encode_membership(x.committed).size();
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      if (n == whole_membership) continue;  // the membership alone: no departures
      EXPECT_FALSE(decode_decided(std::span(bytes).first(n))) << n;
    }
  }
  // One encoding only: an empty list of departures is written as none, ids increase.
  auto empty_list = encode_membership(three());
  empty_list.push_back(std::byte{0});
  empty_list.push_back(std::byte{0});
  EXPECT_FALSE(decode_decided(empty_list));
  decided_membership unordered = some;
  auto bytes = encode_decided(unordered);
  const std::size_t second_id = encode_membership(three()).size() + 2 + 8 + 8 + 2 + 13;
  bytes[second_id] = std::byte{3};  // 9 -> 3, below 4
  EXPECT_FALSE(decode_decided(bytes));
}

TEST(membership_change, departures_note_removals_and_forget_nodes_added_back) {
  departures d;
  membership m = three();
  auto out = without_member(m, 3);
  ASSERT_TRUE(out);
  note_departures(m, *out, d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.at(3), (departure{1, "10.0.0.3:5437"}));
  auto back = with_member(*out, 3, "10.0.0.3:5437");
  ASSERT_TRUE(back);
  note_departures(*out, *back, d);
  EXPECT_TRUE(d.empty()) << "a member again";
  // The latest max_departures removals are kept.
  membership big{0, {{1, "10.0.0.1:1"}}};
  for (std::uint64_t id = 2; id < 2 + max_departures + 5; ++id) {
    membership with = big;
    with.members.emplace(id, "10.0.0.2:" + std::to_string(id));
    membership without = big;
    without.epoch = id;
    note_departures(with, without, d);
  }
  EXPECT_EQ(d.size(), max_departures);
  EXPECT_FALSE(d.contains(2));
  EXPECT_TRUE(d.contains(1 + max_departures + 5));
}

TEST(membership_change, the_first_change_through_raft_is_made_against_its_own_base) {
  // Nothing committed yet: the proposer's view (here the bootstrap configuration) is the starting point.
  auto next = apply_change(std::nullopt, add(4, "10.0.0.4:5437", three()));
  ASSERT_TRUE(next) << next.err().reason;
  EXPECT_EQ(next->epoch, 1u);
  EXPECT_EQ(next->members.size(), 4u);
  // A membership an older version spread by messages (epoch 5) carries on from its epoch.
  membership spread = three();
  spread.epoch = 5;
  next = apply_change(std::nullopt, remove(2, spread));
  ASSERT_TRUE(next) << next.err().reason;
  EXPECT_EQ(next->epoch, 6u);
  EXPECT_FALSE(next->members.contains(2));
  // A base no node could have had is refused, never adopted.
  EXPECT_EQ(errc_of(apply_change(std::nullopt, add(4, "10.0.0.4:5437", membership{}))),
            membership_errc::invalid);
  membership broken = three();
  broken.members[2] = "10.0.0.1:5437";  // node 1's address twice
  EXPECT_EQ(errc_of(apply_change(std::nullopt, remove(3, broken))), membership_errc::invalid);
}

TEST(membership_change, a_change_made_against_an_older_membership_is_stale) {
  membership committed = three();
  committed.epoch = 4;
  membership older = three();
  older.epoch = 3;
  auto r = apply_change(committed, add(4, "10.0.0.4:5437", older));
  ASSERT_EQ(errc_of(r), membership_errc::stale);
  EXPECT_NE(r.err().reason.find("epoch 3"), std::string::npos) << r.err().reason;
  EXPECT_NE(r.err().reason.find("epoch 4"), std::string::npos) << r.err().reason;
  // The same epoch with other members (a view that came by message from elsewhere): stale too.
  membership other = committed;
  other.members.erase(3);
  EXPECT_EQ(errc_of(apply_change(committed, add(4, "10.0.0.4:5437", other))), membership_errc::stale);
  // Made against exactly what is committed: applied.
  auto ok = apply_change(committed, add(4, "10.0.0.4:5437", committed));
  ASSERT_TRUE(ok) << ok.err().reason;
  EXPECT_EQ(ok->epoch, 5u);
}

TEST(membership_change, todays_validation_still_decides) {
  membership committed = three();
  committed.epoch = 2;
  // An existing id at another address, an address another member has, an unknown id, the last member.
  EXPECT_EQ(errc_of(apply_change(committed, add(3, "10.0.0.9:5437", committed))), membership_errc::invalid);
  EXPECT_EQ(errc_of(apply_change(committed, add(4, "10.0.0.2:5437", committed))), membership_errc::invalid);
  EXPECT_EQ(errc_of(apply_change(committed, remove(9, committed))), membership_errc::invalid);
  membership alone{3, {{1, "10.0.0.1:5437"}}};
  EXPECT_EQ(errc_of(apply_change(alone, remove(1, alone))), membership_errc::invalid);
  // A stale change is refused as stale, whatever it asks.
  membership older = committed;
  older.epoch = 1;
  EXPECT_EQ(errc_of(apply_change(committed, remove(9, older))), membership_errc::stale);
}

TEST(membership_change, two_changes_made_at_once_are_decided_one_after_the_other) {
  // Two nodes take a change each against the same membership; group 0's log orders them.
  membership committed = three();
  committed.epoch = 1;
  const membership_change first = add(4, "10.0.0.4:5437", committed);
  const membership_change second = remove(3, committed);
  auto a = apply_change(committed, first);
  ASSERT_TRUE(a) << a.err().reason;
  auto b = apply_change(*a, second);
  EXPECT_EQ(errc_of(b), membership_errc::stale);  // its client gets 409, nothing silently lost
  // Sent again against what it was refused for, it applies after the first.
  auto again = apply_change(*a, remove(3, *a));
  ASSERT_TRUE(again) << again.err().reason;
  EXPECT_EQ(again->epoch, 3u);
  EXPECT_TRUE(again->members.contains(4));
  EXPECT_FALSE(again->members.contains(3));
}

// Many nodes propose changes against views of various ages; one log order applies them all. Every change
// is either applied (and then visible in every later membership, until a later accepted change undoes
// it) or refused as stale or invalid; the epoch counts exactly the applied ones: no change is lost.
TEST(membership_change, a_log_of_concurrent_changes_loses_none) {
  std::mt19937_64 rng(20261201);
  for (int round = 0; round < 200; ++round) {
    std::optional<membership> committed;
    std::vector<membership> history{three()};  // every committed membership, in order
    std::uint64_t applied = 0;
    for (int i = 0; i < 40; ++i) {
      // A proposer saw some recent membership (not always the latest).
      const std::size_t back = std::min<std::size_t>(history.size() - 1, rng() % 3);
      const membership& seen = history[history.size() - 1 - back];
      const std::uint64_t id = 1 + rng() % 6;
      const membership_change c =
          rng() % 2 == 0 ? add(id, "10.0.0." + std::to_string(id) + ":5437", seen) : remove(id, seen);
      auto r = apply_change(committed, c);
      const bool current = committed ? seen == *committed : back == 0;
      if (!current) {
        ASSERT_EQ(errc_of(r), membership_errc::stale) << "round " << round << " change " << i;
        continue;
      }
      if (!r) {
        ASSERT_EQ(errc_of(r), membership_errc::invalid) << r.err().reason;
        continue;
      }
      ++applied;
      ASSERT_EQ(r->epoch, seen.epoch + 1);
      ASSERT_EQ(r->members.contains(id), c.what == op::add);
      committed = *r;
      history.push_back(*r);
    }
    ASSERT_EQ(history.back().epoch, applied);
  }
}

}  // namespace
}  // namespace weir::cluster
