// The group snapshot envelope (replica/group_snapshot.h): round trip with and without the cold index's
// part (version 1 without it, as a node without a cold tier reads), and every damaged form refused.
#include "replica/group_snapshot.h"

#include <string_view>

#include <gtest/gtest.h>

namespace weir::replica {
namespace {

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(static_cast<std::byte>(c));
  return out;
}

std::string text_of(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

TEST(group_snapshot, round_trips_both_parts) {
  const auto streams = bytes_of("streams part");
  const auto subs = bytes_of("subs");
  const auto blob = encode_group_snapshot(streams, subs);
  auto d = decode_group_snapshot(blob);
  ASSERT_TRUE(d) << d.err().reason;
  EXPECT_EQ(text_of(d->streams), "streams part");
  EXPECT_EQ(text_of(d->subscriptions), "subs");
}

TEST(group_snapshot, a_cold_part_round_trips_as_version_2_and_none_writes_version_1) {
  const auto with = encode_group_snapshot(bytes_of("s"), bytes_of("u"), bytes_of("cold index"));
  EXPECT_EQ(with[0], std::byte{2});
  auto d = decode_group_snapshot(with);
  ASSERT_TRUE(d) << d.err().reason;
  EXPECT_EQ(text_of(d->streams), "s");
  EXPECT_EQ(text_of(d->subscriptions), "u");
  EXPECT_EQ(text_of(d->cold), "cold index");
  const auto without = encode_group_snapshot(bytes_of("s"), bytes_of("u"));
  EXPECT_EQ(without[0], std::byte{1});
  auto v1 = decode_group_snapshot(without);
  ASSERT_TRUE(v1);
  EXPECT_TRUE(v1->cold.empty());
  for (std::size_t n = 0; n < with.size(); ++n)
    EXPECT_FALSE(decode_group_snapshot(std::span(with).first(n))) << "prefix of " << n << " bytes";
  // A version 1 snapshot relabelled 2 lacks its cold part; a version 2 one relabelled 1 has a byte left.
  auto relabelled = without;
  relabelled[0] = std::byte{2};
  EXPECT_FALSE(decode_group_snapshot(relabelled));
  auto down = with;
  down[0] = std::byte{1};
  EXPECT_FALSE(decode_group_snapshot(down));
}

TEST(group_snapshot, empty_parts_round_trip) {
  const auto blob = encode_group_snapshot({}, {});
  auto d = decode_group_snapshot(blob);
  ASSERT_TRUE(d) << d.err().reason;
  EXPECT_TRUE(d->streams.empty());
  EXPECT_TRUE(d->subscriptions.empty());
}

TEST(group_snapshot, every_truncation_and_extra_byte_is_refused) {
  const auto blob = encode_group_snapshot(bytes_of("abc"), bytes_of("de"));
  for (std::size_t n = 0; n < blob.size(); ++n)
    EXPECT_FALSE(decode_group_snapshot(std::span(blob).first(n))) << "prefix of " << n << " bytes";
  auto longer = blob;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode_group_snapshot(longer));
}

TEST(group_snapshot, another_version_is_refused) {
  auto blob = encode_group_snapshot(bytes_of("abc"), {});
  blob[0] = std::byte{3};
  auto d = decode_group_snapshot(blob);
  ASSERT_FALSE(d);
  EXPECT_NE(d.err().reason.find("version"), std::string::npos);
}

}  // namespace
}  // namespace weir::replica
