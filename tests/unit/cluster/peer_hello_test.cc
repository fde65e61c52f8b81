#include "cluster/peer_hello.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage/crc32c.h"

namespace weir::cluster {
namespace {

// The wire layout as docs/replication-formats.md ("Peer-link hello and frames") describes it, written
// independently of the codec.
void put_le(std::vector<std::byte>& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<std::byte>(v >> (8 * i)));
}

std::vector<std::byte> documented_hello(std::uint64_t id, std::uint32_t lanes, std::uint32_t core_lanes,
                                        std::uint64_t incarnation, std::uint32_t version = 4) {
  std::vector<std::byte> h;
  for (char c : std::string("weirpeer")) h.push_back(static_cast<std::byte>(c));
  put_le(h, version, 4);
  put_le(h, id, 8);
  put_le(h, lanes, 4);
  put_le(h, core_lanes, 4);
  put_le(h, incarnation, 8);
  put_le(h, storage::crc32c(std::span(h.data(), h.size())), 4);
  return h;
}

TEST(peer_hello, encodes_the_documented_layout_and_decodes_it_back) {
  const peer_hello h{
      .sender = 3, .link_lane = 1, .core_lane = 2, .core_lanes = 4, .incarnation = 0x0123456789abcdef};
  const auto bytes = encode_hello(h);
  ASSERT_EQ(bytes.size(), peer_hello_size);
  EXPECT_EQ(std::vector<std::byte>(bytes.begin(), bytes.end()),
            documented_hello(3, 1 | 2 << 16, 4, 0x0123456789abcdef));
  auto back = decode_hello(bytes);
  ASSERT_TRUE(back) << back.err().reason;
  EXPECT_EQ(*back, h);
  EXPECT_FALSE(hello_rejected_early(bytes));
}

TEST(peer_hello, a_bad_hello_is_an_error) {
  auto good = documented_hello(2, 0, 1, 99);
  auto bad_crc = good;
  bad_crc[30] ^= std::byte{1};  // in the incarnation: the checksum covers it
  EXPECT_EQ(decode_hello(bad_crc).err().as<hello_errc>(), hello_errc::bad_checksum);
  EXPECT_EQ(decode_hello(documented_hello(2, 2, 1, 99)).err().as<hello_errc>(), hello_errc::bad_lane);
  auto version3 = documented_hello(2, 0, 1, 99, 3);
  EXPECT_EQ(decode_hello(version3).err().as<hello_errc>(), hello_errc::bad_version);
  EXPECT_FALSE(decode_hello(std::span(good).first(peer_hello_size - 1)));  // short
  auto not_weir = good;
  not_weir[0] = std::byte{'G'};
  EXPECT_EQ(decode_hello(not_weir).err().as<hello_errc>(), hello_errc::bad_magic);
}

// A version-3 node's hello (32 bytes) is turned away once its version word is in, without waiting for the
// 40 bytes of a version-4 hello; so is anything that does not start as a hello.
TEST(peer_hello, another_version_or_protocol_is_rejected_early) {
  auto version3 = documented_hello(2, 0, 1, 99, 3);
  EXPECT_TRUE(hello_rejected_early(std::span(version3).first(12)));
  EXPECT_FALSE(hello_rejected_early(std::span(version3).first(11)));  // the version is not in yet
  const std::string http = "GET / HTTP/1.1\r\n";
  EXPECT_TRUE(hello_rejected_early(std::as_bytes(std::span(http.data(), 3))));
  EXPECT_FALSE(hello_rejected_early({}));
}

TEST(peer_refusal, round_trips_and_reads_only_once_whole) {
  const peer_refusal r{.why = peer_refusal::reason::other_incarnation,
                       .refused_by = 1,
                       .remembered = 1111,
                       .presented = 2222,
                       .text = "node 3 came back with a different data directory"};
  const auto bytes = encode_refusal(r);
  EXPECT_EQ(bytes.size(), refusal_fixed_size + r.text.size());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto part = decode_refusal(std::span(bytes).first(n));
    ASSERT_TRUE(part) << n << ": " << part.err().reason;
    EXPECT_FALSE(part->refusal) << n;
  }
  auto whole = bytes;
  whole.push_back(std::byte{0});  // what follows is not part of it
  auto back = decode_refusal(whole);
  ASSERT_TRUE(back) << back.err().reason;
  ASSERT_TRUE(back->refusal);
  EXPECT_EQ(*back->refusal, r);
  EXPECT_EQ(back->consumed, bytes.size());
}

TEST(peer_refusal, a_long_text_is_cut_and_damage_is_an_error) {
  peer_refusal r;
  r.refused_by = 2;
  r.text = std::string(max_refusal_text + 100, 'x');
  auto bytes = encode_refusal(r);
  auto back = decode_refusal(bytes);
  ASSERT_TRUE(back && back->refusal);
  EXPECT_EQ(back->refusal->text.size(), max_refusal_text);

  auto damaged = bytes;
  damaged[20] ^= std::byte{4};
  EXPECT_EQ(decode_refusal(damaged).err().as<hello_errc>(), hello_errc::bad_checksum);
  const std::string other = "HTTP/1.1 400";
  EXPECT_FALSE(decode_refusal(std::as_bytes(std::span(other.data(), other.size()))));
  auto unknown_reason = bytes;
  unknown_reason[8] = std::byte{9};
  EXPECT_FALSE(decode_refusal(unknown_reason));
}

}  // namespace
}  // namespace weir::cluster
