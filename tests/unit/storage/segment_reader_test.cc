#include "storage/segment_reader.h"

#include <gtest/gtest.h>

#include <thread>

#include "storage/log_format.h"
#include "storage/log_writer.h"
#include "test_util.h"

namespace weir::storage {
namespace {

using testing::bytes_of;
using testing::completion_queue;
using testing::counting_env;
using testing::replayed;

const std::string dir = "/data/core-0";

std::string seg_path(segment_id id) {
  return dir + "/" + format::segment_file_name(id);
}

// A payload whose every byte says where it is: position i holds 'a' + (i * 7 + salt) % 26.
std::string pattern(std::size_t n, int salt) {
  std::string s(n, ' ');
  for (std::size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>('a' + (i * 7 + static_cast<std::size_t>(salt)) % 26);
  return s;
}

struct segment_reader_test : ::testing::Test {
  mem_env mem;
  counting_env e{mem};
  std::vector<append_ack> acks;
  std::vector<std::string> payloads;

  // Appends `payloads` through a writer and keeps where each record went.
  void write(std::vector<std::string> ps) {
    std::vector<replayed> ignored;
    auto rec = testing::recover_into(mem, dir, ignored);
    ASSERT_TRUE(rec) << rec.err().reason;
    completion_queue q;
    auto w = log_writer::open(mem, dir, log_options{.segment_bytes = 1 << 16}, *rec, q.exec());
    ASSERT_TRUE(w) << w.err().reason;
    for (auto& p : ps) {
      (*w)->append(3, bytes_of(p), [&](result<append_ack> r) {
        ASSERT_TRUE(r) << r.err().reason;
        acks.push_back(*r);
      });
    }
    ASSERT_TRUE(q.run_until([&] { return acks.size() == payloads.size() + ps.size(); }));
    payloads.insert(payloads.end(), ps.begin(), ps.end());
  }
};

TEST_F(segment_reader_test, read_data_returns_the_requested_payload_bytes) {
  write({pattern(1000, 0), "", pattern(5, 1)});
  segment_reader r(e, dir);
  auto all = r.read_data(acks[0].pos, 0, 1000);
  ASSERT_TRUE(all) << all.err().reason;
  EXPECT_EQ(*all, payloads[0]);
  auto mid = r.read_data(acks[0].pos, 333, 100);
  ASSERT_TRUE(mid) << mid.err().reason;
  EXPECT_EQ(*mid, payloads[0].substr(333, 100));
  auto tail = r.read_data(acks[0].pos, 1000, 0);
  ASSERT_TRUE(tail);
  EXPECT_TRUE(tail->empty());
  auto empty = r.read_data(acks[1].pos, 0, 0);
  ASSERT_TRUE(empty) << empty.err().reason;
  EXPECT_TRUE(empty->empty());
  auto last = r.read_data(acks[2].pos, 2, 3);
  ASSERT_TRUE(last) << last.err().reason;
  EXPECT_EQ(*last, payloads[2].substr(2, 3));
}

TEST_F(segment_reader_test, a_range_past_the_payload_is_refused) {
  write({pattern(100, 0)});
  segment_reader r(e, dir);
  for (auto [from, n] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
           {0, 101}, {100, 1}, {101, 0}, {50, ~std::uint64_t{0}}}) {
    auto got = r.read_data(acks[0].pos, from, n);
    ASSERT_FALSE(got) << from << "+" << n;
    EXPECT_EQ(errc_of(got.err()), errc::invalid_argument);
  }
}

TEST_F(segment_reader_test, read_data_checks_the_whole_record_and_names_file_and_offset) {
  write({pattern(200, 0), pattern(200, 1)});
  const std::string path = seg_path(acks[1].pos.segment);
  auto bytes = *mem.contents(path);
  bytes[acks[1].pos.offset + format::record_header_size + 150] ^=
      std::byte{1};  // outside the bytes asked for
  mem.set_contents(path, bytes);
  segment_reader r(e, dir);
  auto got = r.read_data(acks[1].pos, 0, 10);
  ASSERT_FALSE(got);
  EXPECT_EQ(errc_of(got.err()), errc::corruption);
  EXPECT_NE(got.err().reason.find(format::segment_file_name(acks[1].pos.segment) + " at byte " +
                                  std::to_string(acks[1].pos.offset)),
            std::string::npos)
      << got.err().reason;
  auto whole = r.read_record(acks[1].pos);
  EXPECT_FALSE(whole);
  auto good = r.read_data(acks[0].pos, 0, 200);
  ASSERT_TRUE(good) << good.err().reason;
  EXPECT_EQ(*good, payloads[0]);

  // A position that is not a record header is corruption too, not a crash or a huge allocation.
  auto off = r.read_data(log_position{acks[0].pos.segment, acks[0].pos.offset + 1}, 0, 1);
  ASSERT_FALSE(off);
  EXPECT_EQ(errc_of(off.err()), errc::corruption);
}

TEST_F(segment_reader_test, consecutive_reads_of_one_record_read_the_file_once) {
  const std::size_t big = 256 << 10;
  write({pattern(big, 0)});
  segment_reader r(e, dir);
  e.reset_counts();
  std::string joined;
  for (std::uint64_t from = 0; from < big; from += 16 << 10) {
    auto piece = r.read_data(acks[0].pos, from, 16 << 10);
    ASSERT_TRUE(piece) << piece.err().reason;
    joined += *piece;
  }
  EXPECT_EQ(joined, payloads[0]);
  EXPECT_EQ(r.record_loads(), 1u);
  EXPECT_EQ(r.cache_hits(), 15u);
  EXPECT_EQ(e.bytes_read(seg_path(acks[0].pos.segment)), format::record_header_size * 2 + big)
      << "the header once to learn the length, then the record once";
}

TEST_F(segment_reader_test, read_data_many_reads_nearby_records_with_one_pread_each_checked) {
  std::vector<std::string> ps;
  for (int i = 0; i < 60; ++i) ps.push_back(pattern(100 + i, i));
  write(ps);
  segment_reader r(e, dir);
  std::vector<data_piece> pieces;
  for (std::size_t i = 0; i < acks.size(); ++i) pieces.push_back({acks[i].pos, i % 7, 50});
  e.reset_counts();
  auto got = r.read_data_many(pieces);
  ASSERT_EQ(got.size(), pieces.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i]) << i << ": " << got[i].err().reason;
    EXPECT_EQ(*got[i], payloads[i].substr(i % 7, 50)) << i;
  }
  // Two preads per record one by one (header, then the record); a handful for the whole run (one per
  // 64 KiB segment it crosses at most).
  EXPECT_LE(e.read_calls(), 4u);

  // A window smaller than one record: every piece is read alone, with the same bytes.
  auto alone = r.read_data_many(std::span(pieces).first(5), 16);
  for (std::size_t i = 0; i < alone.size(); ++i) EXPECT_EQ(*alone[i], payloads[i].substr(i % 7, 50));
}

TEST_F(segment_reader_test, read_data_many_fails_only_the_damaged_or_impossible_piece) {
  write({pattern(200, 0), pattern(200, 1), pattern(200, 2), pattern(200, 3)});
  const std::string path = seg_path(acks[1].pos.segment);
  auto bytes = *mem.contents(path);
  bytes[acks[1].pos.offset + format::record_header_size + 150] ^= std::byte{1};  // outside the piece
  mem.set_contents(path, bytes);
  segment_reader r(e, dir);
  std::vector<data_piece> pieces = {
      {acks[0].pos, 0, 10}, {acks[1].pos, 0, 10}, {acks[2].pos, 150, 100}, {acks[3].pos, 5, 10}};
  auto got = r.read_data_many(pieces);
  ASSERT_EQ(got.size(), 4u);
  ASSERT_TRUE(got[0]);
  EXPECT_EQ(*got[0], payloads[0].substr(0, 10));
  ASSERT_FALSE(got[1]);
  EXPECT_EQ(errc_of(got[1].err()), errc::corruption);
  ASSERT_FALSE(got[2]);  // past the payload's end
  EXPECT_EQ(errc_of(got[2].err()), errc::invalid_argument);
  ASSERT_TRUE(got[3]);
  EXPECT_EQ(*got[3], payloads[3].substr(5, 10));
}

TEST_F(segment_reader_test, the_cache_is_bounded_by_records_and_bytes) {
  write({pattern(100, 0), pattern(100, 1), pattern(100, 2), pattern(100, 3), pattern(100, 4)});
  segment_reader r(e, dir, segment_reader_options{.cache_records = 4, .cache_bytes = 1 << 20});
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(r.read_data(acks[i].pos, 0, 1));
  EXPECT_EQ(r.record_loads(), 5u);
  ASSERT_TRUE(r.read_data(acks[4].pos, 0, 1));  // newest: cached
  ASSERT_TRUE(r.read_data(acks[1].pos, 0, 1));  // still among the last 4
  EXPECT_EQ(r.record_loads(), 5u);
  ASSERT_TRUE(r.read_data(acks[0].pos, 0, 1));  // evicted by the fifth
  EXPECT_EQ(r.record_loads(), 6u);

  // A record larger than the byte budget is read every time, never kept.
  segment_reader small(e, dir, segment_reader_options{.cache_records = 4, .cache_bytes = 100});
  for (int i = 0; i < 3; ++i) {
    auto got = small.read_data(acks[2].pos, 0, 100);
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, payloads[2]);
  }
  EXPECT_EQ(small.record_loads(), 3u);
  EXPECT_EQ(small.cache_hits(), 0u);
}

TEST_F(segment_reader_test, forget_drops_cached_records_of_a_reclaimed_segment) {
  write({pattern(100, 0)});
  segment_reader r(e, dir);
  ASSERT_TRUE(r.read_data(acks[0].pos, 0, 100));
  r.forget(acks[0].pos.segment);
  ASSERT_TRUE(mem.remove_file(seg_path(acks[0].pos.segment)));
  auto got = r.read_data(acks[0].pos, 0, 100);
  ASSERT_FALSE(got) << "answered from a cache the reclaim should have emptied";
  EXPECT_EQ(errc_of(got.err()), errc::not_found);
}

TEST_F(segment_reader_test, concurrent_readers_get_their_own_bytes) {
  std::vector<std::string> ps;
  for (int i = 0; i < 8; ++i) ps.push_back(pattern(20000 + static_cast<std::size_t>(i) * 100, i));
  write(ps);
  segment_reader r(e, dir, segment_reader_options{.cache_records = 2, .cache_bytes = 64 << 10});
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        std::size_t i = static_cast<std::size_t>((t + round) % 8);
        std::uint64_t from = static_cast<std::uint64_t>(round * 97) % 10000;
        auto got = r.read_data(acks[i].pos, from, 5000);
        if (!got || *got != payloads[i].substr(from, 5000)) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(r.record_loads() + r.cache_hits(), 200u);
}

}  // namespace
}  // namespace weir::storage
