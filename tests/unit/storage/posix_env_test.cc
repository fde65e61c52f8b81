// The real file system under the log: the same behaviour as on mem_env, in a fresh temp directory.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "storage/log_format.h"
#include "test_util.h"

namespace weir::storage {
namespace {

using testing::bytes_of;
using testing::completion_queue;
using testing::replayed;

struct posix_env_test : ::testing::Test {
  std::string root;
  env& e = default_posix_env();

  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "weir-storage-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(root); }
};

TEST_F(posix_env_test, files_append_sync_truncate_read) {
  ASSERT_TRUE(e.create_dirs(root + "/a/b"));
  const std::string path = root + "/a/b/f";
  auto w = e.open_writable(path, open_mode::create_new);
  ASSERT_TRUE(w);
  auto again = e.open_writable(path, open_mode::create_new);
  ASSERT_FALSE(again);
  EXPECT_EQ(errc_of(again.err()), errc::already_exists);
  ASSERT_TRUE((*w)->append(bytes_of("hello world")));
  ASSERT_TRUE((*w)->sync());
  ASSERT_TRUE((*w)->truncate(5));
  ASSERT_TRUE((*w)->append(bytes_of("!")));
  EXPECT_EQ((*w)->size(), 6u);
  auto r = e.open_readable(path);
  ASSERT_TRUE(r);
  std::vector<std::byte> buf(16);
  auto n = (*r)->read(0, buf);
  ASSERT_TRUE(n);
  buf.resize(*n);
  EXPECT_EQ(testing::string_of(buf), "hello!");
  auto names = e.list_dir(root + "/a/b");
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, std::vector<std::string>{"f"});
  ASSERT_TRUE(e.rename_file(path, root + "/a/g"));
  ASSERT_TRUE(e.sync_dir(root + "/a"));
  EXPECT_FALSE(e.file_exists(path));
  EXPECT_TRUE(e.file_exists(root + "/a/g"));
  auto missing = e.open_readable(path);
  ASSERT_FALSE(missing);
  EXPECT_EQ(errc_of(missing.err()), errc::not_found);
}

TEST_F(posix_env_test, log_round_trip_with_roll_checkpoint_and_torn_tail) {
  const std::string dir = root + "/core-0";
  std::vector<append_ack> acks;
  {
    std::vector<replayed> none;
    auto rec = testing::recover_into(e, dir, none);
    ASSERT_TRUE(rec) << rec.err().reason;
    completion_queue q;
    auto w = log_writer::open(e, dir, log_options{.segment_bytes = 1024}, *rec, q.exec());
    ASSERT_TRUE(w) << w.err().reason;
    for (int i = 0; i < 200; ++i) {
      (*w)->append(2, bytes_of("record number " + std::to_string(i)), [&](result<append_ack> r) {
        ASSERT_TRUE(r) << r.err().reason;
        acks.push_back(*r);
      });
    }
    ASSERT_TRUE(q.run_until([&] { return acks.size() == 200; }));
    std::optional<result<std::vector<segment_id>>> ck;
    (*w)->checkpoint(lsn{100}, bytes_of("first hundred"), {},
                     [&](result<std::vector<segment_id>> r) { ck = std::move(r); });
    ASSERT_TRUE(q.run_until([&] { return ck.has_value(); }));
    ASSERT_TRUE(*ck) << ck->err().reason;
    EXPECT_FALSE((*ck)->empty()) << "the checkpoint reports what it reclaimed";
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + format::segment_file_name(segment_id{1}))) << "reclaimed";

  // Tear the last record: chop 3 bytes off the active segment.
  const std::string last = dir + "/" + format::segment_file_name(acks.back().pos.segment);
  std::filesystem::resize_file(last, std::filesystem::file_size(last) - 3);

  std::vector<replayed> got;
  auto rec = testing::recover_into(e, dir, got);
  ASSERT_TRUE(rec) << rec.err().reason;
  ASSERT_TRUE(rec->latest_checkpoint);
  EXPECT_EQ(rec->latest_checkpoint->covered, lsn{100});
  ASSERT_EQ(got.size(), 99u);  // 101..199; 200 was torn
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].seq.value(), 101 + i);
    EXPECT_EQ(got[i].payload, "record number " + std::to_string(100 + i));
    EXPECT_EQ(got[i].pos, acks[100 + i].pos);
  }
  EXPECT_EQ(rec->next_lsn, lsn{200});
}

// Preallocation (log_options::preallocate, fallocate KEEP_SIZE): every segment's size stays exactly what was
// written, so closed segments end at their last record (no zero tail for recovery to judge) and a reopened
// log appends where recovery ended; a crash that persisted a size beyond the data (the reserved blocks read
// as zeros) leaves a zero tail on the last segment, which recovery cuts as a torn tail.
TEST_F(posix_env_test, preallocated_segments_keep_their_written_size_and_a_zero_tail_is_cut) {
  const std::string dir = root + "/core-0";
  constexpr std::uint64_t segment_bytes = 64 * 1024;
  std::vector<append_ack> acks;
  auto write_records = [&](int from, int to) {
    std::vector<replayed> ignored;
    auto rec = testing::recover_into(e, dir, ignored);
    ASSERT_TRUE(rec) << rec.err().reason;
    completion_queue q;
    // interval mode: preallocation is for the modes whose syncs run beside the writes
    auto w = log_writer::open(
        e, dir,
        log_options{
            .segment_bytes = segment_bytes, .sync = *parse_sync_policy("interval:1000"), .preallocate = true},
        *rec, q.exec());
    ASSERT_TRUE(w) << w.err().reason;
    for (int i = from; i < to; ++i) {
      (*w)->append(2, bytes_of(std::string(1000, 'a' + i % 26)), [&](result<append_ack> r) {
        ASSERT_TRUE(r) << r.err().reason;
        acks.push_back(*r);
      });
    }
    ASSERT_TRUE(q.run_until([&] { return acks.size() == static_cast<std::size_t>(to); }));
  };
  write_records(0, 100);    // two segments and a part
  write_records(100, 150);  // reopened: appends after the recovered end
  std::vector<replayed> got;
  auto rec = testing::recover_into(e, dir, got);
  ASSERT_TRUE(rec) << rec.err().reason;
  ASSERT_EQ(got.size(), 150u);
  ASSERT_GE(rec->segments.size(), 3u);
  for (const segment_info& s : rec->segments) {
    const std::string path = dir + "/" + format::segment_file_name(s.id);
    EXPECT_EQ(std::filesystem::file_size(path), s.size) << path << ": the size is what was written";
  }
  // The active segment's blocks were reserved beyond its size (unless the file system cannot: then this
  // checks nothing more, the log works the same).
  const std::string active = dir + "/" + format::segment_file_name(rec->segments.back().id);
  struct stat st {};
  ASSERT_EQ(::stat(active.c_str(), &st), 0);
  if (static_cast<std::uint64_t>(st.st_blocks) * 512 >= segment_bytes) {
    EXPECT_LT(static_cast<std::uint64_t>(st.st_size), segment_bytes);
  }

  // A size persisted beyond the data: 8 KiB of zeros after the last record of the last segment.
  std::filesystem::resize_file(active, std::filesystem::file_size(active) + 8192);
  got.clear();
  rec = testing::recover_into(e, dir, got);
  ASSERT_TRUE(rec) << rec.err().reason;
  ASSERT_EQ(got.size(), 150u) << "the zero tail is cut, every record stays";
  EXPECT_EQ(rec->truncated_bytes, 0u) << "zeros are unused room, not a torn write";
  EXPECT_EQ(rec->prepared_bytes, 8192u);
  EXPECT_EQ(got.back().pos, acks.back().pos);
  write_records(150, 160);  // and the log goes on after the cut
  got.clear();
  rec = testing::recover_into(e, dir, got);
  ASSERT_TRUE(rec) << rec.err().reason;
  EXPECT_EQ(got.size(), 160u);
}

}  // namespace
}  // namespace weir::storage
