#include "storage/log_format.h"

#include <gtest/gtest.h>

#include "storage/crc32c.h"
#include "test_util.h"

namespace weir::storage {
namespace {

using testing::bytes_of;

TEST(crc32c, matches_the_standard_test_vector) {
  // RFC 3720 appendix B.4 / the CRC catalogue's "check" value for CRC-32C.
  EXPECT_EQ(crc32c(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c({}), 0u);
  // 32 bytes of zeros: RFC 3720 B.4 lists 0x8A9136AA.
  std::vector<std::byte> zeros(32);
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
}

TEST(crc32c, extends_across_pieces) {
  auto all = bytes_of("hello, durable world");
  std::span<const std::byte> s(all);
  for (std::size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(crc32c_extend(crc32c(s.first(cut)), s.subspan(cut)), crc32c(s)) << "cut at " << cut;
  }
}

TEST(log_format, record_round_trip) {
  auto payload = bytes_of("append {\"a\":1} to /s/x");
  std::vector<std::byte> rec(format::record_header_size + payload.size());
  format::encode_record(rec, lsn{42}, 7, payload);

  auto h = format::decode_record_header(std::span<const std::byte>(rec).first(format::record_header_size));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->seq, lsn{42});
  EXPECT_EQ(h->type, 7);
  EXPECT_EQ(h->length, payload.size());
  EXPECT_TRUE(format::record_crc_ok(rec));
  EXPECT_EQ(testing::string_of(std::span<const std::byte>(rec).subspan(format::record_header_size)),
            "append {\"a\":1} to /s/x");
}

TEST(log_format, unsealed_then_sealed_equals_encoded) {
  auto payload = bytes_of("xyz");
  std::vector<std::byte> a(format::record_header_size + 3), b(format::record_header_size + 3);
  format::encode_record(a, lsn{9}, 3, payload);
  format::encode_record_unsealed(b, 3, payload);
  EXPECT_FALSE(format::record_crc_ok(b));
  format::seal_record(b, lsn{9});
  EXPECT_EQ(a, b);
}

TEST(log_format, any_flipped_bit_fails_the_crc) {
  auto payload = bytes_of("payload bytes");
  std::vector<std::byte> rec(format::record_header_size + payload.size());
  format::encode_record(rec, lsn{1}, 1, payload);
  for (std::size_t i = 0; i < rec.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      auto copy = rec;
      copy[i] ^= std::byte(1u << bit);
      EXPECT_FALSE(format::record_crc_ok(copy)) << "byte " << i << " bit " << bit;
    }
  }
}

TEST(log_format, rejects_headers_that_cannot_start_a_record) {
  std::vector<std::byte> zeros(format::record_header_size);
  EXPECT_FALSE(format::decode_record_header(zeros)) << "type 0 (zero-filled space) is never a record";

  std::vector<std::byte> rec(format::record_header_size);
  format::encode_record(rec, lsn{1}, 1, {});
  EXPECT_TRUE(format::decode_record_header(rec));
  auto reserved = rec;
  reserved[20] = std::byte{1};
  EXPECT_FALSE(format::decode_record_header(reserved));
  auto huge = rec;
  format::put_u32(huge.data() + 4, format::max_record_payload + 1);
  EXPECT_FALSE(format::decode_record_header(huge));
  EXPECT_FALSE(format::decode_record_header(std::span<const std::byte>(rec).first(10)));
}

TEST(log_format, segment_header_round_trip_and_damage) {
  auto h = format::encode_segment_header({segment_id{5}, lsn{1000}});
  auto d = format::decode_segment_header(h);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->id, segment_id{5});
  EXPECT_EQ(d->base, lsn{1000});
  auto bad = h;
  bad[17] ^= std::byte{0x40};
  EXPECT_FALSE(format::decode_segment_header(bad));
  EXPECT_FALSE(format::decode_segment_header(std::span<const std::byte>(h).first(39)));
}

TEST(log_format, checkpoint_header_round_trip_and_damage) {
  auto blob = bytes_of("snapshot of every stream");
  auto h = format::encode_checkpoint_header(lsn{77}, blob);
  auto d = format::decode_checkpoint_header(h);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->covered, lsn{77});
  EXPECT_EQ(d->blob_length, blob.size());
  EXPECT_TRUE(format::checkpoint_crc_ok(h, blob));
  blob[3] ^= std::byte{1};
  EXPECT_FALSE(format::checkpoint_crc_ok(h, blob));
}

TEST(log_format, file_names_round_trip) {
  EXPECT_EQ(format::segment_file_name(segment_id{12}), "00000000000000000012.log");
  EXPECT_EQ(format::parse_segment_file_name("00000000000000000012.log"), segment_id{12});
  EXPECT_FALSE(format::parse_segment_file_name("12.log"));
  EXPECT_FALSE(format::parse_segment_file_name("00000000000000000000.log"));
  EXPECT_FALSE(format::parse_segment_file_name("0000000000000000001x.log"));
  EXPECT_EQ(format::checkpoint_file_name(lsn{3}), "checkpoint-00000000000000000003.ckpt");
  EXPECT_EQ(format::parse_checkpoint_file_name("checkpoint-00000000000000000003.ckpt"), lsn{3});
  EXPECT_FALSE(format::parse_checkpoint_file_name("checkpoint-00000000000000000003.ckpt.tmp"));
}

TEST(sync_policy, parses_the_three_modes) {
  auto a = parse_sync_policy("always");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->mode, sync_mode::always);
  auto n = parse_sync_policy("never");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->mode, sync_mode::never);
  auto i = parse_sync_policy("interval:25");
  ASSERT_TRUE(i);
  EXPECT_EQ(i->mode, sync_mode::interval);
  EXPECT_EQ(i->interval, std::chrono::milliseconds(25));
  for (auto bad : {"", "sometimes", "interval:", "interval:0", "interval:-3", "interval:10ms"}) {
    auto r = parse_sync_policy(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(errc_of(r.err()), errc::invalid_argument);
  }
}

}  // namespace
}  // namespace weir::storage
