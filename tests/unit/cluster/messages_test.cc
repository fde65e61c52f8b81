// cluster/messages: the entry header (origin, ticket, kind) and the leader call messages; decoding is
// strict and canonical (tests/fuzz/cluster_message_fuzz.cc checks the same on random input).
#include "cluster/messages.h"

#include <gtest/gtest.h>

#include <string_view>

namespace weir::cluster {
namespace {

std::span<const std::byte> view(const std::vector<std::byte>& b) {
  return std::span<const std::byte>(b.data(), b.size());
}

std::vector<std::byte> bytes(std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return std::vector<std::byte>(p, p + s.size());
}

TEST(messages, an_entry_carries_its_kind) {
  const auto command = bytes("payload");
  for (entry_kind kind : {entry_kind::streams, entry_kind::subscriptions, entry_kind::membership}) {
    auto e = encode_entry(entry_header{7, 42, kind}, command);
    ASSERT_EQ(e.size(), entry_header_size + command.size());
    auto d = decode_entry(view(e));
    ASSERT_TRUE(d.has_value()) << d.err().reason;
    EXPECT_EQ(d->first.origin, 7u);
    EXPECT_EQ(d->first.ticket, 42u);
    EXPECT_EQ(d->first.kind, kind);
    EXPECT_TRUE(std::equal(d->second.begin(), d->second.end(), command.begin(), command.end()));
  }
  // The default is a streams command; an empty command is allowed.
  auto plain = encode_entry(entry_header{1, 0}, {});
  ASSERT_EQ(plain.size(), entry_header_size);
  EXPECT_EQ(decode_entry(view(plain))->first.kind, entry_kind::streams);
}

TEST(messages, an_entry_of_an_unknown_kind_or_cut_short_is_malformed) {
  auto e = encode_entry(entry_header{7, 42, entry_kind::subscriptions}, bytes("x"));
  for (std::size_t n = 0; n < entry_header_size; ++n)
    EXPECT_FALSE(decode_entry(view(e).first(n)).has_value());
  for (int kind : {0, 5, 255}) {
    e[16] = std::byte{static_cast<std::uint8_t>(kind)};
    EXPECT_FALSE(decode_entry(view(e)).has_value()) << kind;
  }
  // The cold tier's index records (kind 4) are known.
  e[16] = std::byte{4};
  auto cold = decode_entry(view(e));
  ASSERT_TRUE(cold.has_value());
  EXPECT_EQ(cold->first.kind, entry_kind::cold_index);
}

TEST(messages, a_forward_needs_a_whole_entry_header) {
  auto entry = encode_entry(entry_header{2, 9, entry_kind::subscriptions}, bytes("c"));
  auto m = encode(forward{5, entry});
  auto d = decode(view(m));
  ASSERT_TRUE(d.has_value());
  const auto* f = std::get_if<forward>(&*d);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->group, 5u);
  EXPECT_EQ(f->entry.size(), entry.size());
  auto short_entry = encode(forward{5, view(entry).first(entry_header_size - 1)});
  EXPECT_FALSE(decode(view(short_entry)).has_value());
}

TEST(messages, leader_calls_round_trip) {
  const auto request = bytes("a request");
  auto m = encode(leader_call{77, 12, request});
  auto d = decode(view(m));
  ASSERT_TRUE(d.has_value()) << d.err().reason;
  const auto* c = std::get_if<leader_call>(&*d);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->id, 77u);
  EXPECT_EQ(c->group, 12u);
  EXPECT_TRUE(std::equal(c->request.begin(), c->request.end(), request.begin(), request.end()));
  EXPECT_EQ(encode(*d), m);

  const auto answer = bytes("an answer");
  auto served = encode(leader_reply{77, true, 0, answer});
  auto r = decode(view(served));
  ASSERT_TRUE(r.has_value());
  const auto* q = std::get_if<leader_reply>(&*r);
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(q->served);
  EXPECT_TRUE(std::equal(q->answer.begin(), q->answer.end(), answer.begin(), answer.end()));
  EXPECT_EQ(encode(*r), served);

  auto refused = encode(leader_reply{78, false, 3, {}});
  auto n = decode(view(refused));
  ASSERT_TRUE(n.has_value());
  EXPECT_FALSE(std::get<leader_reply>(*n).served);
  EXPECT_EQ(std::get<leader_reply>(*n).leader, 3u);
}

TEST(messages, malformed_leader_calls_are_refused) {
  auto call = encode(leader_call{1, 2, {}});
  for (std::size_t n = 1; n < call.size(); ++n) EXPECT_FALSE(decode(view(call).first(n)).has_value()) << n;
  auto reply = encode(leader_reply{1, false, 0, {}});
  for (std::size_t n = 1; n < reply.size(); ++n) EXPECT_FALSE(decode(view(reply).first(n)).has_value()) << n;
  auto with_answer = reply;
  with_answer.push_back(std::byte{1});  // "not served" carries no answer
  EXPECT_FALSE(decode(view(with_answer)).has_value());
  auto bad_flag = reply;
  bad_flag[9] = std::byte{2};
  EXPECT_FALSE(decode(view(bad_flag)).has_value());
}

TEST(messages, leading_round_trips_and_refuses_what_does_not_add_up) {
  auto m = encode(leading{{{0, 7}, {5, 12}, {63, 1}}});
  auto d = decode(view(m));
  ASSERT_TRUE(d.has_value()) << d.err().reason;
  const auto* l = std::get_if<leading>(&*d);
  ASSERT_NE(l, nullptr);
  ASSERT_EQ(l->groups.size(), 3u);
  EXPECT_EQ(l->groups[1], (std::pair<std::uint32_t, std::uint64_t>{5, 12}));
  EXPECT_EQ(encode(*d), m);
  EXPECT_TRUE(decode(view(encode(leading{}))).has_value());  // a node that leads nothing
  for (std::size_t n = 1; n < m.size(); ++n) EXPECT_FALSE(decode(view(m).first(n)).has_value()) << n;
  auto trailing = m;
  trailing.push_back(std::byte{0});
  EXPECT_FALSE(decode(view(trailing)).has_value());
  auto huge = encode(leading{});
  huge[1] = std::byte{0xff};  // a count of groups the bytes cannot hold
  huge[2] = std::byte{0xff};
  EXPECT_FALSE(decode(view(huge)).has_value());
}

}  // namespace
}  // namespace weir::cluster
