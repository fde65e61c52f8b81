// Reading a raft node log's records through storage::segment_reader (raft::node_log_framing): the
// bytes of an entry at its place, checked against the record's CRC, under the segment's live name and
// once it is kept.
#include "raft/node_log_framing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "raft/log_record.h"
#include "storage/mem_env.h"

namespace weir::raft {
namespace {

const std::string dir = "/data/raft";
const node_log_framing framing("node.log");

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

struct written_entry {
  std::uint64_t record_offset = 0;
  std::uint32_t data_offset = 0;  // from the record's body
  std::string data;
};

struct node_log_framing_test : ::testing::Test {
  storage::mem_env env;
  std::vector<written_entry> entries;

  // Segment `no`: a file header, then one entries record per element of `records` (each the entries'
  // data), written whole.
  void write_segment(std::uint32_t no, const std::vector<std::vector<std::string>>& records) {
    std::vector<std::byte> file;
    const auto header = record::encode_file_header();
    file.insert(file.end(), header.begin(), header.end());
    std::uint64_t index = 1;
    for (const auto& datas : records) {
      const std::uint64_t at = file.size();
      record::entries rec{log_index(index), {}};
      for (const auto& d : datas) rec.items.push_back(wire::entry{term_id(1), 1, bytes_of(d)});
      record::encode_record(record::log_record{group_id(3), rec}, file);
      // body: u8 type, u32 group, u64 first, u32 n; each entry: u64 term, u8 type, u32 length, data
      std::uint32_t off = 1 + 4 + 8 + 4;
      for (const auto& d : datas) {
        off += 8 + 1 + 4;
        entries.push_back(written_entry{at, off, d});
        off += static_cast<std::uint32_t>(d.size());
      }
      index += datas.size();
    }
    ASSERT_TRUE(env.create_dirs(dir));
    auto f = env.open_writable(dir + "/" + framing.file_name(storage::segment_id{no}, false),
                               storage::open_mode::create_new);
    ASSERT_TRUE(f) << f.err().reason;
    ASSERT_TRUE((*f)->append(file));
    ASSERT_TRUE((*f)->sync());
  }
  static storage::log_position pos(std::uint32_t no, const written_entry& e) {
    return storage::log_position{storage::segment_id{no}, e.record_offset};
  }
};

TEST_F(node_log_framing_test, an_entry_is_read_at_its_place_whole_and_in_pieces) {
  write_segment(1, {{"first entry", std::string(5000, 'x') + "end"}, {"", "third"}});
  storage::segment_reader r(env, dir, {}, framing);
  for (const auto& e : entries) {
    auto got = r.read_data(pos(1, e), e.data_offset, e.data.size());
    ASSERT_TRUE(got) << got.err().reason;
    EXPECT_EQ(*got, e.data);
  }
  auto tail = r.read_data(pos(1, entries[1]), entries[1].data_offset + 5000, 3);
  ASSERT_TRUE(tail) << tail.err().reason;
  EXPECT_EQ(*tail, "end");
  // Several pieces in one pread, each checked.
  std::vector<storage::data_piece> pieces;
  for (const auto& e : entries)
    pieces.push_back(storage::data_piece{pos(1, e), e.data_offset, e.data.size()});
  auto many = r.read_data_many(pieces);
  ASSERT_EQ(many.size(), entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    ASSERT_TRUE(many[i]) << many[i].err().reason;
    EXPECT_EQ(*many[i], entries[i].data);
  }
}

TEST_F(node_log_framing_test, a_damaged_record_is_corruption_and_a_range_past_it_is_refused) {
  write_segment(1, {{"hello node log"}});
  const written_entry e = entries[0];
  {
    storage::segment_reader r(env, dir, {}, framing);
    auto past = r.read_data(pos(1, e), e.data_offset, e.data.size() + 1);
    ASSERT_FALSE(past);
    EXPECT_EQ(storage::errc_of(past.err()), storage::errc::invalid_argument);
  }
  // Flip one data byte: the body's CRC no longer matches.
  const std::string path = dir + "/" + framing.file_name(storage::segment_id{1}, false);
  auto whole = storage::read_whole_file(env, path);
  ASSERT_TRUE(whole);
  (*whole)[e.record_offset + record::record_header_size + e.data_offset] ^= std::byte{1};
  ASSERT_TRUE(env.remove_file(path));
  auto f = env.open_writable(path, storage::open_mode::create_new);
  ASSERT_TRUE(f);
  ASSERT_TRUE((*f)->append(*whole));
  storage::segment_reader r(env, dir, {}, framing);
  auto got = r.read_data(pos(1, e), e.data_offset, e.data.size());
  ASSERT_FALSE(got);
  EXPECT_EQ(storage::errc_of(got.err()), storage::errc::corruption);
  std::vector<storage::data_piece> pieces{{pos(1, e), e.data_offset, e.data.size()}};
  auto many = r.read_data_many(pieces);
  ASSERT_EQ(many.size(), 1u);
  EXPECT_FALSE(many[0]);
}

TEST_F(node_log_framing_test, a_kept_segment_is_read_under_its_kept_name) {
  write_segment(7, {{"kept bytes"}});
  ASSERT_TRUE(env.rename_file(dir + "/" + framing.file_name(storage::segment_id{7}, false),
                              dir + "/" + framing.file_name(storage::segment_id{7}, true)));
  EXPECT_EQ(framing.file_name(storage::segment_id{7}, true), "node.log.kept.00000007");
  storage::segment_reader r(env, dir, {}, framing);
  auto got = r.read_data(pos(7, entries[0]), entries[0].data_offset, entries[0].data.size());
  ASSERT_TRUE(got) << got.err().reason;
  EXPECT_EQ(*got, "kept bytes");
  // Neither name: the live name's error.
  auto none = r.read_data(storage::log_position{storage::segment_id{8}, 16}, 0, 1);
  EXPECT_FALSE(none);
}

TEST_F(node_log_framing_test, write_ahead_log_records_are_not_read_through_this_framing) {
  write_segment(1, {{"x"}});
  storage::segment_reader r(env, dir, {}, framing);
  auto rec = r.read_record(pos(1, entries[0]));
  ASSERT_FALSE(rec);
  EXPECT_EQ(storage::errc_of(rec.err()), storage::errc::invalid_argument);
}

}  // namespace
}  // namespace weir::raft
