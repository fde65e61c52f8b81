#include "streams/command_codec.h"

#include <gtest/gtest.h>

namespace weir::streams {
namespace {

payload bytes(std::string s, std::uint32_t messages = 0) {
  payload p;
  p.bytes = make_chunk(std::move(s));
  p.messages = messages;
  return p;
}

TEST(command_codec, create_round_trip) {
  create_command c;
  c.path = "/v1/stream/x";
  c.content_type = "application/json";
  c.expiry.ttl_seconds = 3600;
  c.expiry.expires_at_text = "";
  c.closed = true;
  c.initial = bytes("1,2,", 2);
  fork_spec f;
  f.source = "/v1/stream/src";
  f.offset = stream_offset(42);
  f.sub_offset = 3;
  f.resolved.point = stream_offset(42);
  f.resolved.prefix = bytes("abc");
  f.resolved.source_content_type = "application/json";
  f.resolved.source_expiry.expires_at_ms = -5;
  f.resolved.source_expiry.expires_at_text = "1969-12-31T23:59:59.995Z";
  c.fork = f;
  c.now_ms = 1'700'000'000'123;

  std::string wire = encode(command{c});
  result<command> back = decode(wire);
  ASSERT_TRUE(back.has_value()) << back.err().reason;
  const auto& d = std::get<create_command>(*back);
  EXPECT_EQ(d.path, c.path);
  EXPECT_EQ(d.content_type, c.content_type);
  EXPECT_EQ(d.expiry.ttl_seconds, c.expiry.ttl_seconds);
  EXPECT_TRUE(d.closed);
  EXPECT_EQ(*d.initial.bytes, "1,2,");
  EXPECT_EQ(d.initial.messages, 2u);
  ASSERT_TRUE(d.fork.has_value());
  EXPECT_EQ(d.fork->source, f.source);
  EXPECT_EQ(d.fork->offset, f.offset);
  EXPECT_EQ(d.fork->sub_offset, 3u);
  EXPECT_EQ(*d.fork->resolved.prefix.bytes, "abc");
  EXPECT_EQ(d.fork->resolved.source_expiry.expires_at_ms, std::optional<std::int64_t>(-5));
  EXPECT_EQ(d.fork->resolved.source_expiry.expires_at_text, f.resolved.source_expiry.expires_at_text);
  EXPECT_EQ(d.now_ms, c.now_ms);
  EXPECT_EQ(encode(*back), wire);
}

TEST(command_codec, every_kind_round_trips) {
  append_command a;
  a.path = "/p";
  a.content_type = "text/plain";
  a.body = bytes("data");
  a.body.json_invalid = true;
  a.stream_seq = "0009";
  a.producer = producer_ref{"writer-1", 7, 1ull << 53};
  a.close = true;
  a.now_ms = 99;
  fork_retain_command r{"/src", stream_offset(5), 2, "text/plain", 11};
  std::vector<command> all = {a,
                              delete_command{"/d", 1},
                              touch_command{"/t", 2},
                              expire_command{"/e", 3},
                              r,
                              fork_release_command{"/src"},
                              delete_command{"/held", 4, 60'000},
                              fork_retain_command{"/src", std::nullopt, 0, "", 12, "/fork"},
                              fork_release_command{"/src", fork_origin{3, 77}},
                              fork_tombstone_command{"/fork", fork_origin{3, 77}, 5, 13}};
  for (const command& c : all) {
    std::string wire = encode(c);
    result<command> back = decode(wire);
    ASSERT_TRUE(back.has_value()) << back.err().reason;
    EXPECT_EQ(back->index(), c.index());
    EXPECT_EQ(command_path(*back), command_path(c));
    EXPECT_EQ(encode(*back), wire);
  }
  result<command> decoded = decode(encode(command{a}));
  ASSERT_TRUE(decoded.has_value());
  const auto& back_a = std::get<append_command>(*decoded);
  EXPECT_EQ(back_a.producer, a.producer);
  EXPECT_TRUE(back_a.body.json_invalid);
  EXPECT_EQ(back_a.stream_seq, a.stream_seq);
}

// A delete without a hold keeps the encoding logs written before holds existed (kind 3); one with a hold
// is kind 8 and keeps it.
TEST(command_codec, a_delete_carries_its_hold_and_an_unheld_one_keeps_the_old_encoding) {
  std::string plain = encode(delete_command{"/d", 5});
  EXPECT_EQ(static_cast<std::uint8_t>(plain[0]), 3);
  std::string held = encode(delete_command{"/d", 5, 1234});
  EXPECT_EQ(static_cast<std::uint8_t>(held[0]), 8);
  result<command> back = decode(held);
  ASSERT_TRUE(back.has_value()) << back.err().reason;
  const auto& d = std::get<delete_command>(*back);
  EXPECT_EQ(d.path, "/d");
  EXPECT_EQ(d.now_ms, 5);
  EXPECT_EQ(d.hold_ms, 1234);
  EXPECT_EQ(std::get<delete_command>(*decode(plain)).hold_ms, 0);
}

// A fork's create with an origin (cluster mode) is kind 9 and keeps it; one without keeps kind 1, the
// encoding of entries written before origins existed, which decode as forks without one.
TEST(command_codec, a_fork_carries_its_origin_and_one_without_keeps_the_old_encoding) {
  create_command c;
  c.path = "/f";
  c.content_type = "text/plain";
  c.initial = bytes("own");
  fork_spec f;
  f.source = "/src";
  f.resolved.point = stream_offset(7);
  f.resolved.retained = true;
  c.fork = f;
  c.now_ms = 3;
  const std::string plain = encode(command{c});
  EXPECT_EQ(static_cast<std::uint8_t>(plain[0]), 1);
  result<command> old = decode(plain);
  ASSERT_TRUE(old.has_value()) << old.err().reason;
  EXPECT_FALSE(std::get<create_command>(*old).fork->resolved.origin.has_value());

  c.fork->resolved.origin = fork_origin{63, (1ull << 40) + 5};
  std::uint32_t off = 0;
  const std::string with = encode(command{c}, &off);
  EXPECT_EQ(static_cast<std::uint8_t>(with[0]), 9);
  EXPECT_EQ(with.substr(off, 3), "own");
  result<command> back = decode(with);
  ASSERT_TRUE(back.has_value()) << back.err().reason;
  const auto& d = std::get<create_command>(*back);
  ASSERT_TRUE(d.fork.has_value());
  EXPECT_EQ(d.fork->resolved.origin, c.fork->resolved.origin);
  EXPECT_EQ(d.fork->source, "/src");
  EXPECT_EQ(d.fork->resolved.point, stream_offset(7));
  EXPECT_TRUE(d.fork->resolved.retained);
  EXPECT_EQ(*d.initial.bytes, "own");
  EXPECT_EQ(d.now_ms, 3);
  EXPECT_EQ(encode(*back), with);
  for (std::size_t n = 0; n < with.size(); ++n) {
    EXPECT_FALSE(decode(std::string_view(with).substr(0, n)).has_value()) << "prefix " << n;
  }

  // Kind 9 names a fork: a create without one is damaged, as is a group beyond 32 bits.
  create_command plain_create;
  plain_create.path = "/p";
  std::string no_fork = encode(command{plain_create});
  no_fork[0] = 9;
  no_fork += std::string("\x01\x02", 2);
  EXPECT_FALSE(decode(no_fork).has_value());
  std::string wide = plain;
  wide[0] = 9;
  wide += std::string("\x80\x80\x80\x80\x10\x01", 6);  // 2^32, then index 1
  EXPECT_FALSE(decode(wide).has_value());
  wide = plain;
  wide[0] = 9;
  wide += std::string("\xff\xff\xff\xff\x0f\x01", 6);  // 2^32 - 1
  result<command> widest = decode(wide);
  ASSERT_TRUE(widest.has_value()) << widest.err().reason;
  EXPECT_EQ(std::get<create_command>(*widest).fork->resolved.origin, (fork_origin{0xffffffffu, 1}));
}

// Cluster forks: a retain naming its fork is kind 10, a release naming its origin kind 11, a tombstone
// kind 12; a retain without a fork and a release without an origin keep kinds 6 and 7 (single nodes,
// and entries written before), which still decode.
TEST(command_codec, fork_references_by_origin_and_tombstones_have_kinds_of_their_own) {
  fork_retain_command r{"/src", stream_offset(5), 2, "text/plain", 11};
  EXPECT_EQ(encode(command{r})[0], 6);
  r.fork = "/fork";
  const std::string named = encode(command{r});
  EXPECT_EQ(named[0], 10);
  auto back = decode(named);
  ASSERT_TRUE(back.has_value()) << back.err().reason;
  const auto& br = std::get<fork_retain_command>(*back);
  EXPECT_EQ(br.fork, "/fork");
  EXPECT_EQ(br.source, "/src");
  EXPECT_EQ(br.offset, stream_offset(5));
  EXPECT_EQ(br.now_ms, 11);
  std::string empty_fork = encode(command{fork_retain_command{"/src"}});
  empty_fork[0] = 10;
  empty_fork += std::string("\x00", 1);
  EXPECT_FALSE(decode(empty_fork).has_value());

  // A retain carrying a record found in the bucket is kind 13, with or without a fork named.
  for (const std::string fork : {"", "/fork"}) {
    fork_retain_command b{
        "/src", stream_offset(5), 2, "text/plain", 11, fork, carried_record{stream_offset(900), 7}};
    const std::string with_record = encode(command{b});
    EXPECT_EQ(with_record[0], 13);
    auto decoded = decode(with_record);
    ASSERT_TRUE(decoded.has_value()) << decoded.err().reason;
    const auto& db = std::get<fork_retain_command>(*decoded);
    EXPECT_EQ(db.fork, fork);
    EXPECT_EQ(db.sub_offset, 2u);
    EXPECT_EQ(db.point_record, (carried_record{stream_offset(900), 7}));
    EXPECT_FALSE(decode(with_record.substr(0, with_record.size() - 1)).has_value());
  }
  // One whose record decides is kind 14, with or without a record and a fork named.
  for (const std::string fork : {"", "/fork"}) {
    for (const auto& record :
         {std::optional<carried_record>(), std::optional(carried_record{stream_offset(77), 3})}) {
      fork_retain_command d{"/src", stream_offset(5), 1, "", 11, fork, record, true};
      const std::string encoded = encode(command{d});
      EXPECT_EQ(encoded[0], 14);
      auto decoded = decode(encoded);
      ASSERT_TRUE(decoded.has_value()) << decoded.err().reason;
      const auto& dd = std::get<fork_retain_command>(*decoded);
      EXPECT_TRUE(dd.record_decides);
      EXPECT_EQ(dd.fork, fork);
      EXPECT_EQ(dd.point_record, record);
      EXPECT_EQ(dd.offset, stream_offset(5));
      EXPECT_FALSE(decode(encoded.substr(0, encoded.size() - 1)).has_value());
    }
  }

  const std::string old_release = encode(command{fork_release_command{"/src"}});
  EXPECT_EQ(old_release[0], 7);
  EXPECT_FALSE(std::get<fork_release_command>(*decode(old_release)).origin.has_value());
  const std::string by_origin =
      encode(command{fork_release_command{"/src", fork_origin{0xffffffffu, 1ull << 50}}});
  EXPECT_EQ(by_origin[0], 11);
  auto rel = decode(by_origin);
  ASSERT_TRUE(rel.has_value()) << rel.err().reason;
  EXPECT_EQ(std::get<fork_release_command>(*rel).origin, (fork_origin{0xffffffffu, 1ull << 50}));

  const std::string tomb = encode(command{fork_tombstone_command{"/fork", fork_origin{2, 9}, 4, -3}});
  EXPECT_EQ(tomb[0], 12);
  auto t = decode(tomb);
  ASSERT_TRUE(t.has_value()) << t.err().reason;
  const auto& bt = std::get<fork_tombstone_command>(*t);
  EXPECT_EQ(bt.path, "/fork");
  EXPECT_EQ(bt.origin, (fork_origin{2, 9}));
  EXPECT_EQ(bt.group, 4u);
  EXPECT_EQ(bt.now_ms, -3);
  EXPECT_EQ(command_path(*t), "/fork");
  for (const std::string& wire : {named, by_origin, tomb}) {
    for (std::size_t n = 0; n < wire.size(); ++n)
      EXPECT_FALSE(decode(std::string_view(wire).substr(0, n)).has_value()) << "prefix " << n;
  }
}

TEST(command_codec, rejects_truncated_and_unknown_input) {
  append_command a;
  a.path = "/p";
  a.body = bytes("data");
  std::string wire = encode(command{a});
  for (std::size_t n = 0; n < wire.size(); ++n) {
    EXPECT_FALSE(decode(std::string_view(wire).substr(0, n)).has_value()) << "prefix " << n;
  }
  EXPECT_FALSE(decode(std::string("\x0d", 1)).has_value());
  EXPECT_FALSE(decode(wire + "x").has_value());
}

// The bytes at *data_offset of the encoding are exactly the payload's.
void expect_payload_at(const command& c, const payload& p) {
  std::uint32_t off = 0xdeadbeef;
  std::string wire = encode(c, &off);
  ASSERT_NE(off, 0xdeadbeefu);
  ASSERT_LE(off + p.size(), wire.size());
  EXPECT_EQ(wire.substr(off, p.size()), *p.bytes);
  EXPECT_EQ(wire, encode(c));  // asking for the offset does not change the encoding
}

TEST(command_codec, data_offset_points_at_a_create_payload) {
  create_command c;
  c.path = "/v1/stream/x";
  c.content_type = "text/plain";
  c.initial = bytes("hello");
  expect_payload_at(c, c.initial);
  c.initial = bytes(std::string(300, 'z') + "end");  // a two-byte length
  expect_payload_at(c, c.initial);
}

TEST(command_codec, data_offset_points_at_the_initial_payload_of_a_fork_not_its_prefix) {
  create_command c;
  c.path = "/f";
  c.initial = bytes("own");
  fork_spec f;
  f.source = "/src";
  f.resolved.point = stream_offset(7);
  f.resolved.prefix = bytes("own");  // same bytes: the offset must be the initial's, before the fork
  c.fork = f;
  std::uint32_t off = 0;
  std::string wire = encode(command{c}, &off);
  EXPECT_EQ(wire.substr(off, 3), "own");
  EXPECT_LT(off, wire.find("/src"));
}

TEST(command_codec, data_offset_points_at_an_append_body) {
  append_command a;
  a.path = "/p";
  a.content_type = "text/plain";
  a.body = bytes("data");
  a.stream_seq = "0001";
  a.producer = producer_ref{"w", 1, 2};
  expect_payload_at(a, a.body);
  append_command j;
  j.path = "/j";
  j.content_type = "application/json";
  j.body = bytes("{\"a\":1},[2],", 2);
  expect_payload_at(j, j.body);
}

TEST(command_codec, data_offset_is_left_alone_without_data) {
  append_command close_only;
  close_only.path = "/p";
  close_only.close = true;
  create_command empty;
  empty.path = "/e";
  create_command prefix_only;  // a fork whose only data is its materialized prefix
  prefix_only.path = "/f";
  prefix_only.fork = fork_spec{};
  prefix_only.fork->resolved.prefix = bytes("abc");
  for (const command& c : std::vector<command>{close_only, empty, prefix_only, delete_command{"/d", 1},
                                               touch_command{"/t", 2}, fork_release_command{"/s"}}) {
    std::uint32_t off = 77;
    (void)encode(c, &off);
    EXPECT_EQ(off, 77u) << c.index();
  }
}

}  // namespace
}  // namespace weir::streams
