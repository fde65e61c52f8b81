// The cold object format: round trips, block arithmetic, every CRC checked, and garbage refused (never a
// crash) by the trailer and footer decoders.
#include "tier/object_format.h"

#include <gtest/gtest.h>

#include <random>

#include "storage/crc32c.h"
#include "tier/little_endian.h"
#include "tier/mem_object_store.h"

namespace weir::tier {
namespace {

object_bytes bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span(s.data(), s.size()));
  return object_bytes(b.begin(), b.end());
}

std::string text_of(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

std::string pattern(std::size_t n, char base) {
  std::string s(n, base);
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(base + i % 23);
  return s;
}

struct decoded {
  object_trailer trailer;
  object_footer footer;
};

decoded decode(const object_bytes& obj) {
  auto t = decode_object_trailer(std::span(obj).last(object_trailer_size), obj.size());
  EXPECT_TRUE(t) << t.err().reason;
  auto f = decode_object_footer(std::span(obj).subspan(t->footer_offset, t->footer_length), *t);
  EXPECT_TRUE(f) << f.err().reason;
  return decoded{*t, *f};
}

TEST(object_format, round_trip_several_streams) {
  object_writer w(cold_group{7}, 16);
  std::string a = pattern(40, 'a');
  std::string b = pattern(5, 'B');
  w.add("s/a", streams::stream_offset{100}, streams::stream_offset{140}, bytes_of(a));
  w.add("s/b", streams::stream_offset{0}, streams::stream_offset{5}, bytes_of(b));
  w.add("s/empty", streams::stream_offset{9}, streams::stream_offset{9}, {});
  object_bytes obj = w.finish();
  EXPECT_EQ(obj.size(), w.encoded_size());
  auto bs = decode_object_header(std::span(obj).first(object_header_size));
  ASSERT_TRUE(bs);
  EXPECT_EQ(*bs, 16u);

  decoded d = decode(obj);
  EXPECT_EQ(d.trailer.data_length, 45u);
  EXPECT_EQ(d.trailer.block_size, 16u);
  EXPECT_EQ(d.trailer.footer_offset, object_header_size + stored_data_size(45, 16));
  ASSERT_EQ(d.footer.ranges.size(), 3u);
  EXPECT_EQ(d.footer.ranges, w.ranges());
  EXPECT_EQ(d.footer.ranges[1].data_position, 40u);

  // Every sub-range of the data region, through the block arithmetic, gives the right bytes.
  std::string data = a + b;
  for (std::uint64_t pos = 0; pos < data.size(); ++pos) {
    for (std::uint64_t len = 1; pos + len <= data.size(); ++len) {
      block_span s = blocks_covering(d.trailer, pos, len);
      EXPECT_EQ(s.object_offset, object_header_size + s.first_block * 20);
      auto stored = std::span(obj).subspan(s.object_offset, s.object_length);
      auto got = extract_from_blocks(d.trailer, s, stored, pos, len);
      ASSERT_TRUE(got) << got.err().reason;
      ASSERT_EQ(text_of(*got), data.substr(pos, len)) << pos << "+" << len;
    }
  }
}

TEST(object_format, empty_object) {
  object_writer w(cold_group{1});
  object_bytes obj = w.finish();
  EXPECT_EQ(obj.size(), object_header_size + 4 + object_trailer_size);
  decoded d = decode(obj);
  EXPECT_EQ(d.trailer.data_length, 0u);
  EXPECT_TRUE(d.footer.ranges.empty());
}

TEST(object_format, bytes_added_in_pieces_encode_as_one_add_into_a_reused_buffer) {
  // The writer encodes blocks as bytes come: pieces that straddle block ends, and a buffer that held an
  // earlier object, give the same object as one add into a fresh writer.
  const std::string data = pattern(100, 'p');
  object_writer one(cold_group{3}, 16);
  one.add("s", streams::stream_offset{5}, streams::stream_offset{105}, bytes_of(data));
  one.add("t", streams::stream_offset{0}, streams::stream_offset{7}, bytes_of(pattern(7, 'q')));
  const object_bytes want = one.finish();

  object_bytes old(4096, std::byte{0x5a});
  object_writer pieces(cold_group{3}, 16, 64, std::move(old));
  std::size_t at = 0;
  for (std::size_t n : {1u, 15u, 16u, 17u, 3u, 48u}) {
    pieces.add("s", streams::stream_offset{5 + at}, streams::stream_offset{5 + at + n},
               bytes_of(std::string_view(data).substr(at, n)));
    at += n;
  }
  ASSERT_EQ(at, data.size());
  pieces.add("t", streams::stream_offset{0}, streams::stream_offset{7}, bytes_of(pattern(7, 'q')));
  EXPECT_EQ(pieces.ranges().size(), 2u);
  EXPECT_EQ(pieces.finish(), want);
}

TEST(object_format, every_flipped_byte_is_caught) {
  object_writer w(cold_group{2}, 8);
  w.add("x", streams::stream_offset{0}, streams::stream_offset{20}, bytes_of(pattern(20, 'k')));
  const object_bytes good = w.finish();
  for (std::size_t i = 0; i < good.size(); ++i) {
    object_bytes bad = good;
    bad[i] ^= std::byte{0x01};
    bool caught = false;
    if (i < object_header_size) {
      caught = !decode_object_header(std::span(bad).first(object_header_size));
    } else {
      auto t = decode_object_trailer(std::span(bad).last(object_trailer_size), bad.size());
      if (!t) {
        caught = true;
      } else {
        auto f = decode_object_footer(std::span(bad).subspan(t->footer_offset, t->footer_length), *t);
        if (!f) {
          caught = true;
        } else {
          block_span s = blocks_covering(*t, 0, t->data_length);
          caught = !extract_from_blocks(*t, s, std::span(bad).subspan(s.object_offset, s.object_length), 0,
                                        t->data_length);
        }
      }
    }
    EXPECT_TRUE(caught) << "byte " << i;
  }
}

TEST(object_format, decoders_refuse_garbage) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 2000; ++round) {
    std::size_t n = rng() % 200;
    object_bytes junk(n);
    for (auto& b : junk) b = static_cast<std::byte>(rng());
    if (n >= object_trailer_size) {
      auto t = decode_object_trailer(std::span(junk).last(object_trailer_size), n);
      EXPECT_FALSE(t);  // the trailer's CRC and magic make a random pass practically impossible
    }
    object_trailer t{};
    t.footer_length = static_cast<std::uint32_t>(n);
    t.data_length = rng() % 1000;
    t.block_size = 16;
    t.footer_crc = storage::crc32c(junk);  // a right CRC: the structure checks must hold on their own
    auto f = decode_object_footer(junk, t);
    if (f) {
      for (const auto& r : f->ranges) {
        EXPECT_LE(r.data_position + r.length, t.data_length);
        EXPECT_LE(r.first, r.end);
      }
    }
  }
}

TEST(object_format, footer_count_cannot_force_a_huge_allocation) {
  object_bytes footer(8, std::byte{0});
  footer[0] = footer[1] = footer[2] = footer[3] = std::byte{0xff};  // 4 billion ranges in 8 bytes
  object_trailer t{};
  t.footer_length = 8;
  t.footer_crc = storage::crc32c(footer);
  t.block_size = 16;
  auto f = decode_object_footer(footer, t);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.err().as<object_format_errc>(), object_format_errc::inconsistent);
}

TEST(object_format, trailer_sizes_must_fit_the_object) {
  object_writer w(cold_group{2}, 8);
  w.add("x", streams::stream_offset{0}, streams::stream_offset{20}, bytes_of(pattern(20, 'k')));
  object_bytes obj = w.finish();
  auto tail = std::span(obj).last(object_trailer_size);
  EXPECT_TRUE(decode_object_trailer(tail, obj.size()));
  EXPECT_FALSE(decode_object_trailer(tail, obj.size() + 1));
  EXPECT_FALSE(decode_object_trailer(tail, obj.size() - 1));
  EXPECT_FALSE(decode_object_trailer(tail, std::uint64_t{1} << 60));
  // A size that leaves room for whole table entries that the footer does not list: the footer refuses it.
  auto longer = decode_object_trailer(tail, obj.size() + object_record_entry_size);
  ASSERT_TRUE(longer);
  EXPECT_FALSE(
      decode_object_footer(std::span(obj).subspan(longer->footer_offset, longer->footer_length), *longer));
}

TEST(object_format, reader_through_a_store_uses_aligned_ranges) {
  mem_object_store store;
  object_writer w(cold_group{4}, 32);
  std::string a = pattern(300, 'a');
  w.add("s/a", streams::stream_offset{0}, streams::stream_offset{300}, bytes_of(a));
  ASSERT_TRUE(store.put("k.obj", w.finish()));
  auto size = store.head("k.obj")->size;

  auto r = object_reader::open(store, "k.obj", size);
  ASSERT_TRUE(r) << r.err().describe();
  EXPECT_EQ(store.requests(store_op::get), 1u);  // the footer came with the tail
  auto got = r->read(40, 100);
  ASSERT_TRUE(got) << got.err().describe();
  EXPECT_EQ(text_of(*got), a.substr(40, 100));
  EXPECT_EQ(store.requests(store_op::get), 2u);  // one range GET for the blocks
}

TEST(object_format, reader_reports_corrupt_and_short_reads) {
  mem_object_store store;
  object_writer w(cold_group{4}, 32);
  w.add("s/a", streams::stream_offset{0}, streams::stream_offset{100}, bytes_of(pattern(100, 'a')));
  ASSERT_TRUE(store.put("k.obj", w.finish()));
  auto r = object_reader::open(store, "k.obj", store.head("k.obj")->size);
  ASSERT_TRUE(r);

  store.inject({store_op::get, fault_kind::corrupt_read});
  auto corrupt = r->read(0, 100);
  ASSERT_FALSE(corrupt);
  EXPECT_EQ(corrupt.err().code, "Corrupt");

  store.inject({store_op::get, fault_kind::short_read});
  auto short_read = r->read(0, 100);
  ASSERT_FALSE(short_read);
  EXPECT_EQ(short_read.err().kind, store_errc::connection);  // retryable: the body was cut

  EXPECT_TRUE(r->read(0, 100));  // the faults were one-shot
  auto past = r->read(90, 20);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.err().kind, store_errc::invalid);
}

TEST(object_format, reader_reads_a_large_footer_separately) {
  mem_object_store store;
  object_writer w(cold_group{4}, 1024);
  std::string name(1000, 'n');
  for (int i = 0; i < 100; ++i) {  // ~100 KB of footer: more than the tail read
    w.add(name + std::to_string(i), streams::stream_offset{0}, streams::stream_offset{1}, bytes_of("x"));
  }
  object_bytes obj = w.finish();
  ASSERT_TRUE(store.put("k.obj", obj));
  auto r = object_reader::open(store, "k.obj", obj.size());
  ASSERT_TRUE(r) << r.err().describe();
  EXPECT_EQ(r->footer().ranges.size(), 100u);
  EXPECT_EQ(store.requests(store_op::get), 2u);
  auto x = r->read(r->footer().ranges[57]);
  ASSERT_TRUE(x);
  EXPECT_EQ(text_of(*x), "x");
}

object_record rec(std::uint64_t begin, std::uint64_t end, std::uint32_t messages = 0) {
  return object_record{streams::stream_offset{begin}, streams::stream_offset{end}, messages};
}

TEST(object_format, each_range_lists_the_records_that_begin_in_it) {
  mem_object_store store;
  object_writer w(cold_group{5}, 16);
  // s/a: bytes 10..70 in two adds (one range), the first record beginning mid-range (the range starts
  // inside a record begun in an earlier object), the last one ending past the range (cut at the end).
  const std::vector<object_record> a1 = {rec(15, 30), rec(30, 40, 2)};
  const std::vector<object_record> a2 = {rec(40, 55), rec(55, 90)};
  w.add("s/a", streams::stream_offset{10}, streams::stream_offset{40}, bytes_of(pattern(30, 'a')), a1);
  w.add("s/a", streams::stream_offset{40}, streams::stream_offset{70}, bytes_of(pattern(30, 'b')), a2);
  w.add("s/b", streams::stream_offset{0}, streams::stream_offset{5}, bytes_of(pattern(5, 'c')));
  const std::vector<object_record> c = {rec(7, 8, 1), rec(8, 9, 1), rec(9, 12, 3)};
  w.add("s/c", streams::stream_offset{7}, streams::stream_offset{12}, bytes_of(pattern(5, 'd')), c);
  EXPECT_EQ(w.table_size(), 7 * object_record_entry_size);
  object_bytes obj = w.finish();
  EXPECT_EQ(obj.size(), w.encoded_size());
  ASSERT_TRUE(store.put("k.obj", obj));

  auto r = object_reader::open(store, "k.obj", obj.size());
  ASSERT_TRUE(r) << r.err().describe();
  const object_footer& f = r->footer();
  EXPECT_EQ(f.trailer.version, 2);
  EXPECT_EQ(f.trailer.table_length, 7 * object_record_entry_size);
  ASSERT_EQ(f.ranges.size(), 3u);
  ASSERT_EQ(f.records.size(), 3u);
  EXPECT_EQ(f.records[0].count, 4u);
  EXPECT_EQ(f.records[1].count, 0u);
  std::vector<object_record> want_a = a1;
  want_a.insert(want_a.end(), a2.begin(), a2.end());
  const std::uint64_t gets = store.requests(store_op::get);
  auto got_a = r->records(0);
  ASSERT_TRUE(got_a) << got_a.err().describe();
  EXPECT_EQ(*got_a, want_a);
  auto got_b = r->records(1);
  ASSERT_TRUE(got_b);
  EXPECT_TRUE(got_b->empty());
  auto got_c = r->records(2);
  ASSERT_TRUE(got_c);
  EXPECT_EQ(*got_c, c);
  EXPECT_EQ(store.requests(store_op::get), gets + 2);  // one GET per range with records, none without

  // The data reads are those of an object without a table.
  auto bytes = r->read(f.ranges[2]);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(text_of(*bytes), pattern(5, 'd'));
}

TEST(object_format, a_range_whose_records_leave_a_gap_lists_none) {
  mem_object_store store;
  object_writer w(cold_group{5}, 16);
  // Records [0, 10) and [10, 20), then bytes from 20 whose first record begins at 25: [20, 25) is not
  // covered, so the range's records are not known.
  w.add("s", streams::stream_offset{0}, streams::stream_offset{20}, bytes_of(pattern(20, 'a')),
        std::vector<object_record>{rec(0, 10), rec(10, 20)});
  w.add("s", streams::stream_offset{20}, streams::stream_offset{30}, bytes_of(pattern(10, 'b')),
        std::vector<object_record>{rec(25, 30)});
  w.add("s", streams::stream_offset{30}, streams::stream_offset{40}, bytes_of(pattern(10, 'c')),
        std::vector<object_record>{rec(30, 40)});
  w.add("t", streams::stream_offset{0}, streams::stream_offset{5}, bytes_of(pattern(5, 'd')),
        std::vector<object_record>{rec(0, 5)});
  EXPECT_EQ(w.table_size(), object_record_entry_size);  // only t's
  object_bytes obj = w.finish();
  ASSERT_TRUE(store.put("k.obj", obj));
  auto r = object_reader::open(store, "k.obj", obj.size());
  ASSERT_TRUE(r) << r.err().describe();
  ASSERT_EQ(r->footer().ranges.size(), 2u);
  auto s_records = r->records(0);
  ASSERT_TRUE(s_records);
  EXPECT_TRUE(s_records->empty());
  auto t_records = r->records(1);
  ASSERT_TRUE(t_records);
  EXPECT_EQ(*t_records, std::vector<object_record>{rec(0, 5)});
}

TEST(object_format, a_flipped_record_table_byte_is_caught) {
  object_writer w(cold_group{2}, 8);
  w.add("x", streams::stream_offset{0}, streams::stream_offset{20}, bytes_of(pattern(20, 'k')),
        std::vector<object_record>{rec(0, 6, 1), rec(6, 20, 2)});
  const object_bytes good = w.finish();
  decoded d = decode(good);
  ASSERT_EQ(d.footer.records.size(), 1u);
  auto entries = std::span(good).subspan(d.trailer.table_offset, d.trailer.table_length);
  ASSERT_TRUE(decode_range_records(entries, d.footer, 0));
  for (std::size_t i = 0; i < entries.size(); ++i) {
    object_bytes bad(entries.begin(), entries.end());
    bad[i] ^= std::byte{0x01};
    auto got = decode_range_records(bad, d.footer, 0);
    ASSERT_FALSE(got) << "byte " << i;
    EXPECT_EQ(got.err().code, static_cast<int>(object_format_errc::bad_checksum));
  }
  // Entries that disagree with the range are refused even with a matching CRC.
  object_footer f = d.footer;
  object_bytes past;
  put_le<std::uint64_t>(past, 40);  // a record beginning at 40, past the range's end (20)
  put_le<std::uint32_t>(past, 0);
  put_le<std::uint64_t>(past, 50);
  put_le<std::uint32_t>(past, 0);
  f.records[0].first_begin = streams::stream_offset{0};
  f.records[0].crc = storage::crc32c(past);
  auto inconsistent = decode_range_records(past, f, 0);
  ASSERT_FALSE(inconsistent);
  EXPECT_EQ(inconsistent.err().code, static_cast<int>(object_format_errc::inconsistent));
}

// The object a version 1 writer made of the same ranges: no record table, the version 1 footer and
// trailer magic (made here from a version 2 object without records).
object_bytes as_version_1(const object_bytes& v2) {
  decoded d = decode(v2);
  object_bytes out(v2.begin(), v2.begin() + static_cast<std::ptrdiff_t>(d.trailer.footer_offset));
  out[8] = std::byte{1};
  out[9] = std::byte{0};
  auto header_crc = storage::crc32c(std::span(out).first(28));
  for (int i = 0; i < 4; ++i) out[28 + i] = static_cast<std::byte>(header_crc >> (8 * i));
  // The footer without its per-range record counts (16 bytes each, at its end).
  const std::size_t footer_v1 = d.trailer.footer_length - 16 * d.footer.ranges.size();
  const std::size_t footer_at = out.size();
  out.insert(out.end(), v2.begin() + static_cast<std::ptrdiff_t>(d.trailer.footer_offset),
             v2.begin() + static_cast<std::ptrdiff_t>(d.trailer.footer_offset + footer_v1));
  const std::size_t trailer_at = out.size();
  put_le<std::uint64_t>(out, d.trailer.data_length);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(footer_v1));
  put_le<std::uint32_t>(out, storage::crc32c(std::span(out).subspan(footer_at, footer_v1)));
  put_le<std::uint32_t>(out, d.trailer.block_size);
  put_le<std::uint32_t>(out, storage::crc32c(std::span(out).subspan(trailer_at, 20)));
  for (char c : std::string_view("WEIRTAIL")) out.push_back(static_cast<std::byte>(c));
  return out;
}

TEST(object_format, a_version_1_object_reads_as_before_and_has_no_record_table) {
  mem_object_store store;
  object_writer w(cold_group{4}, 32);
  const std::string a = pattern(100, 'a');
  w.add("s/a", streams::stream_offset{0}, streams::stream_offset{100}, bytes_of(a));
  const object_bytes v1 = as_version_1(w.finish());
  auto header = decode_object_header(std::span(v1).first(object_header_size));
  ASSERT_TRUE(header) << header.err().reason;
  ASSERT_TRUE(store.put("k.obj", v1));
  auto r = object_reader::open(store, "k.obj", v1.size());
  ASSERT_TRUE(r) << r.err().describe();
  EXPECT_EQ(r->footer().trailer.version, 1);
  EXPECT_TRUE(r->footer().records.empty());
  auto got = r->read(r->footer().ranges[0]);
  ASSERT_TRUE(got);
  EXPECT_EQ(text_of(*got), a);
  auto records = r->records(0);
  ASSERT_FALSE(records);
  EXPECT_EQ(records.err().code, "NoRecordTable");
  // A version 1 trailer must end where its footer does: bytes between them are refused.
  object_bytes padded = v1;
  padded.insert(padded.end() - object_trailer_size, 12, std::byte{0});
  EXPECT_FALSE(decode_object_trailer(std::span(padded).last(object_trailer_size), padded.size()));
}

TEST(object_format, reader_refuses_a_foreign_object) {
  mem_object_store store;
  ASSERT_TRUE(store.put("k.obj", object_bytes(100, std::byte{'z'})));
  auto r = object_reader::open(store, "k.obj", 100);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().code, "BadObject");
  auto tiny = object_reader::open(store, "k.obj", 10);
  ASSERT_FALSE(tiny);
}

}  // namespace
}  // namespace weir::tier
