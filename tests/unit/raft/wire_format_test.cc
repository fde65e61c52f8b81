// The raft wire format (wire_format.h): every message type round-trips, a partial frame asks for more,
// and damaged or hostile bytes are refused, never decoded into another message.
#include "raft/wire_format.h"

#include <gtest/gtest.h>

namespace weir::raft::wire {
namespace {

std::vector<std::byte> bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span<const char>(s.data(), s.size()));
  return {b.begin(), b.end()};
}

snapshot_chunk chunk_sample(const std::vector<std::byte>& data) {
  snapshot_chunk c{77, 1, log_index(100), term_id(8), {}};
  const auto n = static_cast<std::uint32_t>(data.size());
  c.pieces.push_back(record_piece{record_key{3, 4096, 0, 40, 0, n}, 0, data});
  // The last piece of a larger record.
  c.pieces.push_back(record_piece{record_key{4, 12, 0, 40, 8, n + 100}, 100, data});
  return c;
}

std::vector<message> samples(const std::vector<std::byte>& data) {
  append_entries ae{term_id(7), log_index(41), term_id(6), log_index(40), {}};
  ae.entries.push_back(entry{term_id(7), 1, data});
  ae.entries.push_back(entry{term_id(7), 2, {}});
  ae.entries.push_back(
      entry{term_id(7), 3, std::span<const std::byte>(data).first(std::min<std::size_t>(3, data.size()))});
  install_snapshot is{term_id(9), log_index(100), term_id(8), {}, log_index(50), 0, 0, data};
  is.conf.push_back(server{node_id(1), 1, "n1"});
  is.conf.push_back(server{node_id(2), 0, "10.0.0.2:7000"});
  is.conf.push_back(server{node_id(3), 2, ""});
  return {
      message{group_id(3), std::move(ae)},
      message{group_id(0), append_entries{term_id(1), log_index(0), term_id(0), log_index(0), {}}},
      message{group_id(63), append_entries_result{term_id(7), log_index(0), log_index(44)}},
      message{group_id(5), request_vote{term_id(4), node_id(2), log_index(10), term_id(3), true, false}},
      message{group_id(5), request_vote{term_id(4), node_id(2), log_index(10), term_id(3), false, true}},
      message{group_id(6), request_vote_result{term_id(4), true, 1}},
      message{group_id(6), request_vote_result{term_id(4), false, 2}},
      message{group_id(0xffffffff), std::move(is)},
      message{group_id(1), timeout_now{term_id(12), log_index(99), term_id(11)}},
      message{group_id(2),
              install_snapshot{term_id(9), log_index(100), term_id(8), {}, log_index(50), 77, 3, data}},
      message{group_id(2), chunk_sample(data)},
      message{group_id(2), snapshot_chunk{77, 0, log_index(100), term_id(8), {}}},
      message{group_id(2), snapshot_chunk_ack{77, 2, 0}},
      message{group_id(2), snapshot_chunk_ack{77, 0, 12}},
      message{group_id(2), snapshot_chunk_ack{77, 0, 0, {record_key{4, 96, 1, 11, 3, 500}}}},
      message{group_id(2),
              snapshot_chunk_ack{77, 0, 2, {record_key{4, 0, 0, 11, 0, 9}, record_key{5, 8, 0, 11, 0, 7}}}},
  };
}

std::string describe(const message& m) {
  std::vector<std::byte> out;
  encode_frame(m, out);  // the encoding is canonical: equal messages, equal bytes
  return std::string(reinterpret_cast<const char*>(out.data()), out.size());
}

TEST(raft_wire_format, every_message_type_round_trips) {
  const auto data = bytes_of("hello, raft");
  for (const message& m : samples(data)) {
    std::vector<std::byte> frame;
    encode_frame(m, frame);
    auto d = decode_frame(frame);
    ASSERT_TRUE(d.has_value()) << d.err().reason;
    ASSERT_TRUE(d->has_value());
    EXPECT_EQ((*d)->consumed, frame.size());
    EXPECT_EQ((*d)->msg.group, m.group);
    EXPECT_EQ(type_of((*d)->msg.payload), type_of(m.payload));
    EXPECT_EQ(describe((*d)->msg), describe(m));
  }
}

TEST(raft_wire_format, fields_survive_exactly) {
  const auto data = bytes_of("abcdef");
  const auto all = samples(data);
  std::vector<std::byte> frame;
  encode_frame(all[0], frame);
  auto d = decode_frame(frame);
  ASSERT_TRUE(d && d->has_value());
  const auto& ae = std::get<append_entries>((*d)->msg.payload);
  EXPECT_EQ(ae.term, term_id(7));
  EXPECT_EQ(ae.prev_log_index, log_index(41));
  EXPECT_EQ(ae.prev_log_term, term_id(6));
  EXPECT_EQ(ae.leader_commit, log_index(40));
  ASSERT_EQ(ae.entries.size(), 3u);
  EXPECT_EQ(ae.entries[0].type, 1);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(ae.entries[0].data.data()), ae.entries[0].data.size()),
            "abcdef");
  EXPECT_TRUE(ae.entries[1].data.empty());
  EXPECT_EQ(ae.entries[2].data.size(), 3u);

  frame.clear();
  encode_frame(all[7], frame);
  d = decode_frame(frame);
  ASSERT_TRUE(d && d->has_value());
  const auto& is = std::get<install_snapshot>((*d)->msg.payload);
  ASSERT_EQ(is.conf.size(), 3u);
  EXPECT_EQ(is.conf[1].id, node_id(2));
  EXPECT_EQ(is.conf[1].role, 0);
  EXPECT_EQ(is.conf[1].address, "10.0.0.2:7000");
  EXPECT_EQ(is.conf_index, log_index(50));
  EXPECT_EQ(is.data.size(), data.size());
  EXPECT_EQ(is.transfer, 0u);

  frame.clear();
  encode_frame(all[9], frame);
  d = decode_frame(frame);
  ASSERT_TRUE(d && d->has_value());
  const auto& it = std::get<install_snapshot>((*d)->msg.payload);
  EXPECT_EQ(it.transfer, 77u);
  EXPECT_EQ(it.chunks, 3u);

  frame.clear();
  encode_frame(all[10], frame);
  d = decode_frame(frame);
  ASSERT_TRUE(d && d->has_value());
  EXPECT_EQ(type_of((*d)->msg.payload), message_type::snapshot_chunk);
  const auto& c = std::get<snapshot_chunk>((*d)->msg.payload);
  EXPECT_EQ(c.transfer, 77u);
  EXPECT_EQ(c.seq, 1u);
  EXPECT_EQ(c.last_index, log_index(100));
  EXPECT_EQ(c.last_term, term_id(8));
  ASSERT_EQ(c.pieces.size(), 2u);
  EXPECT_EQ(c.pieces[1].key, (record_key{4, 12, 0, 40, 8, static_cast<std::uint32_t>(data.size()) + 100}));
  EXPECT_EQ(c.pieces[1].piece_offset, 100u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(c.pieces[1].bytes.data()), c.pieces[1].bytes.size()),
            "abcdef");
}

TEST(raft_wire_format, chunk_pieces_outside_their_record_are_refused) {
  const auto data = bytes_of("abcdef");
  auto refused = [&](record_piece p) {
    snapshot_chunk c{5, 1, log_index(3), term_id(1), {p}};
    std::vector<std::byte> frame;
    encode_frame(message{group_id(1), c}, frame);
    auto d = decode_frame(frame);
    return !d.has_value();
  };
  EXPECT_FALSE(refused(record_piece{record_key{1, 0, 0, 0, 0, 6}, 0, data}));
  EXPECT_TRUE(refused(record_piece{record_key{1, 0, 0, 0, 0, 5}, 0, data}));   // longer than the record
  EXPECT_TRUE(refused(record_piece{record_key{1, 0, 0, 0, 0, 10}, 5, data}));  // past its end
  EXPECT_TRUE(refused(record_piece{record_key{0, 0, 0, 0, 0, 6}, 0, data}));   // segment 0: nowhere
  EXPECT_TRUE(refused(record_piece{record_key{1, 0, 0, 0, 0, 6}, 0, {}}));     // empty piece
  // Transfer 0 is "none".
  std::vector<std::byte> frame;
  encode_frame(message{group_id(1), snapshot_chunk{0, 0, log_index(3), term_id(1), {}}}, frame);
  EXPECT_FALSE(decode_frame(frame).has_value());
  // Every chunk names its snapshot (index 0 is none); chunk 0 opens the transfer and only it is empty.
  const record_piece p{record_key{1, 0, 0, 0, 0, 6}, 0, data};
  auto decodes = [&](const message& m) {
    frame.clear();
    encode_frame(m, frame);
    return decode_frame(frame).has_value();
  };
  EXPECT_TRUE(decodes(message{group_id(1), snapshot_chunk{5, 0, log_index(3), term_id(1), {}}}));
  EXPECT_FALSE(decodes(message{group_id(1), snapshot_chunk{5, 0, log_index(0), term_id(1), {}}}));
  EXPECT_FALSE(decodes(message{group_id(1), snapshot_chunk{5, 0, log_index(3), term_id(1), {p}}}));
  EXPECT_FALSE(decodes(message{group_id(1), snapshot_chunk{5, 1, log_index(3), term_id(1), {}}}));
  EXPECT_FALSE(decodes(message{group_id(1), snapshot_chunk{5, 1, log_index(0), term_id(1), {p}}}));
  // Only the answer to the opening chunk names where to resume.
  EXPECT_TRUE(decodes(message{group_id(1), snapshot_chunk_ack{5, 0, 7}}));
  EXPECT_FALSE(decodes(message{group_id(1), snapshot_chunk_ack{5, 1, 7}}));
  // And only it names records held, each somewhere (segment 0 is none) and not empty.
  const record_key held{3, 0, 0, 11, 0, 4};
  EXPECT_TRUE(decodes(message{group_id(1), snapshot_chunk_ack{5, 0, 0, {held}}}));
  EXPECT_FALSE(decodes(message{group_id(1), snapshot_chunk_ack{5, 1, 0, {held}}}));
  EXPECT_FALSE(decodes(message{group_id(1), snapshot_chunk_ack{5, 0, 0, {record_key{0, 0, 0, 11, 0, 4}}}}));
  EXPECT_FALSE(decodes(message{group_id(1), snapshot_chunk_ack{5, 0, 0, {record_key{3, 0, 0, 11, 0, 0}}}}));
  frame.clear();
  encode_frame(message{group_id(1),
                       install_snapshot{term_id(1), log_index(1), term_id(1), {}, log_index(1), 0, 2, {}}},
               frame);
  EXPECT_FALSE(decode_frame(frame).has_value());
}

TEST(raft_wire_format, frames_follow_each_other_in_one_packet) {
  const auto data = bytes_of("x");
  std::vector<std::byte> packet;
  const auto all = samples(data);
  for (const auto& m : all) encode_frame(m, packet);
  std::span<const std::byte> rest(packet);
  std::size_t n = 0;
  while (!rest.empty()) {
    auto d = decode_frame(rest);
    ASSERT_TRUE(d && d->has_value());
    EXPECT_EQ(describe((*d)->msg), describe(all[n]));
    rest = rest.subspan((*d)->consumed);
    ++n;
  }
  EXPECT_EQ(n, all.size());
}

TEST(raft_wire_format, a_partial_frame_asks_for_more) {
  const auto data = bytes_of("partial");
  for (const message& m : samples(data)) {
    std::vector<std::byte> frame;
    encode_frame(m, frame);
    for (std::size_t len = 0; len < frame.size(); ++len) {
      auto d = decode_frame(std::span<const std::byte>(frame).first(len));
      ASSERT_TRUE(d.has_value()) << "prefix " << len << ": " << d.err().reason;
      EXPECT_FALSE(d->has_value()) << "prefix " << len;
    }
  }
}

TEST(raft_wire_format, no_damaged_byte_decodes) {
  const auto data = bytes_of("damage");
  for (const message& m : samples(data)) {
    std::vector<std::byte> frame;
    encode_frame(m, frame);
    for (std::size_t i = 0; i < frame.size(); ++i) {
      for (std::uint8_t flip : {0x01, 0x80, 0xff}) {
        auto bad = frame;
        bad[i] ^= std::byte{flip};
        auto d = decode_frame(bad);
        EXPECT_FALSE(d.has_value() && d->has_value()) << "byte " << i << " ^ " << int(flip);
      }
    }
  }
}

TEST(raft_wire_format, hostile_bodies_are_refused) {
  auto body = [](std::initializer_list<int> b) {
    std::vector<std::byte> v;
    for (int x : b) v.push_back(std::byte(static_cast<std::uint8_t>(x)));
    return v;
  };
  const auto g = {1, 0, 0, 0};
  auto with = [&](std::initializer_list<int> rest) {
    std::vector<int> all(g);
    all.insert(all.end(), rest);
    std::vector<std::byte> v;
    for (int x : all) v.push_back(std::byte(static_cast<std::uint8_t>(x)));
    return v;
  };
  EXPECT_FALSE(decode_body(body({})).has_value());
  EXPECT_FALSE(decode_body(with({0})).has_value());  // type 0
  EXPECT_FALSE(decode_body(with({9})).has_value());  // type 9
  // snapshot_chunk claiming 2^32-1 pieces in a few bytes: refused before any allocation.
  // (transfer 1, chunk 1, snapshot index 1 term 1)
  EXPECT_FALSE(decode_body(with({7, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,    1,    0,    0,   0,
                                 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}))
                   .has_value());
  // append_entries claiming 2^32-1 entries in a few bytes: refused before any allocation.
  EXPECT_FALSE(decode_body(with({1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,    0,    0,    0,   0,
                                 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}))
                   .has_value());
  // request_vote_result: vote_granted must be 0 or 1, pre_vote 0..2.
  EXPECT_FALSE(decode_body(with({4, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0})).has_value());
  EXPECT_FALSE(decode_body(with({4, 1, 0, 0, 0, 0, 0, 0, 0, 1, 3})).has_value());
  EXPECT_TRUE(decode_body(with({4, 1, 0, 0, 0, 0, 0, 0, 0, 1, 2})).has_value());
  // trailing bytes after a whole message
  EXPECT_FALSE(decode_body(with({4, 1, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0})).has_value());
  // a frame longer than the limit is refused without waiting for its bytes
  auto big = body({0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0});
  auto d = decode_frame(big);
  EXPECT_FALSE(d.has_value());
}

}  // namespace
}  // namespace weir::raft::wire
