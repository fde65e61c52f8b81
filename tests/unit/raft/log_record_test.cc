// The node log record format (log_record.h): round trips, torn tails, damage.
#include "raft/log_record.h"

#include <gtest/gtest.h>

namespace weir::raft::record {
namespace {

std::vector<std::byte> bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span<const char>(s.data(), s.size()));
  return {b.begin(), b.end()};
}

std::vector<log_record> samples(const std::vector<std::byte>& data) {
  entries e{log_index(12), {}};
  e.items.push_back(wire::entry{term_id(3), 1, data});
  e.items.push_back(wire::entry{term_id(3), 2, {}});
  snapshot s{log_index(40), term_id(5), log_index(1), {}, 8, data};
  s.conf.push_back(wire::server{node_id(1), 1, "n1"});
  snapshot installed{log_index(41), term_id(6), log_index(1), s.conf, 0, {}};
  return {log_record{group_id(2), std::move(e)},     log_record{group_id(2), term{term_id(9)}},
          log_record{group_id(7), vote{node_id(3)}}, log_record{group_id(7), truncate{log_index(5)}},
          log_record{group_id(0), std::move(s)},     log_record{group_id(0), std::move(installed)}};
}

std::string bytes(const log_record& r) {
  std::vector<std::byte> out;
  encode_record(r, out);
  return std::string(reinterpret_cast<const char*>(out.data()), out.size());
}

TEST(raft_log_record, every_record_type_round_trips) {
  const auto data = bytes_of("payload");
  std::vector<std::byte> file;
  const auto all = samples(data);
  for (const auto& r : all) encode_record(r, file);
  std::span<const std::byte> rest(file);
  for (const auto& want : all) {
    auto d = decode_record(rest);
    ASSERT_TRUE(d && d->has_value());
    EXPECT_EQ((*d)->rec.group, want.group);
    EXPECT_EQ((*d)->rec.payload.index(), want.payload.index());
    EXPECT_EQ(bytes((*d)->rec), bytes(want));
    rest = rest.subspan((*d)->consumed);
  }
  EXPECT_TRUE(rest.empty());
}

TEST(raft_log_record, file_header_is_checked) {
  auto h = encode_file_header();
  EXPECT_TRUE(file_header_ok(h));
  for (std::size_t i = 0; i < h.size(); ++i) {
    auto bad = h;
    bad[i] ^= std::byte{0x10};
    EXPECT_FALSE(file_header_ok(bad)) << i;
  }
  EXPECT_FALSE(file_header_ok(std::span<const std::byte>(h).first(10)));
}

TEST(raft_log_record, a_torn_record_is_incomplete_and_a_damaged_one_is_refused) {
  const auto data = bytes_of("torn");
  for (const auto& r : samples(data)) {
    std::vector<std::byte> rec;
    encode_record(r, rec);
    for (std::size_t len = 0; len < rec.size(); ++len) {
      auto d = decode_record(std::span<const std::byte>(rec).first(len));
      ASSERT_TRUE(d.has_value());
      EXPECT_FALSE(d->has_value());
    }
    for (std::size_t i = 0; i < rec.size(); ++i) {
      auto bad = rec;
      bad[i] ^= std::byte{0x04};
      auto d = decode_record(bad);
      EXPECT_FALSE(d.has_value() && d->has_value()) << "byte " << i;
    }
  }
}

TEST(raft_log_record, invalid_fields_are_refused) {
  // entries with no items, and with first index 0
  std::vector<std::byte> out;
  encode_record(log_record{group_id(1), entries{log_index(1), {}}}, out);
  EXPECT_FALSE(decode_record(out).has_value());
  out.clear();
  encode_record(log_record{group_id(1), entries{log_index(0), {wire::entry{term_id(1), 1, {}}}}}, out);
  EXPECT_FALSE(decode_record(out).has_value());
  out.clear();
  encode_record(log_record{group_id(1), entries{log_index(1), {wire::entry{term_id(1), 9, {}}}}}, out);
  EXPECT_FALSE(decode_record(out).has_value());
  out.clear();
  encode_record(log_record{group_id(1), truncate{log_index(0)}}, out);
  EXPECT_FALSE(decode_record(out).has_value());
}

}  // namespace
}  // namespace weir::raft::record
