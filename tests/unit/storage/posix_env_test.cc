// The real file system under the log: the same behaviour as on mem_env, in a fresh temp directory.
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

}  // namespace
}  // namespace weir::storage
