#include "storage/mem_env.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace weir::storage {
namespace {

using testing::bytes_of;
using testing::string_of;

std::string read_all(mem_env& e, const std::string& path) {
  auto c = e.contents(path);
  return c ? string_of(*c) : std::string("<missing>");
}

TEST(mem_env, crash_drops_unsynced_bytes) {
  mem_env e;
  ASSERT_TRUE(e.create_dirs("/d"));
  auto f = e.open_writable("/d/a", open_mode::create_new);
  ASSERT_TRUE(f);
  ASSERT_TRUE(e.sync_dir("/d"));
  ASSERT_TRUE((*f)->append(bytes_of("synced")));
  ASSERT_TRUE((*f)->sync());
  ASSERT_TRUE((*f)->append(bytes_of("-lost")));
  EXPECT_EQ(read_all(e, "/d/a"), "synced-lost");
  e.crash();
  e.restart();
  EXPECT_EQ(read_all(e, "/d/a"), "synced");
  // The old handle is detached: writing through it changes nothing.
  (void)(*f)->append(bytes_of("ghost"));
  EXPECT_EQ(read_all(e, "/d/a"), "synced");
}

TEST(mem_env, torn_crash_keeps_a_prefix_of_the_unsynced_bytes) {
  bool saw_partial = false;
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    mem_env e;
    ASSERT_TRUE(e.create_dirs("/d"));
    auto f = e.open_writable("/d/a", open_mode::create_new);
    ASSERT_TRUE(f);
    ASSERT_TRUE(e.sync_dir("/d"));
    ASSERT_TRUE((*f)->append(bytes_of("base")));
    ASSERT_TRUE((*f)->sync());
    ASSERT_TRUE((*f)->append(bytes_of("0123456789")));
    e.crash(seed);
    e.restart();
    std::string got = read_all(e, "/d/a");
    ASSERT_TRUE(std::string("base0123456789").starts_with(got) && got.starts_with("base")) << got;
    saw_partial |= got.size() > 4 && got.size() < 14;
  }
  EXPECT_TRUE(saw_partial);
}

TEST(mem_env, files_created_since_the_last_dir_sync_vanish) {
  mem_env e;
  ASSERT_TRUE(e.create_dirs("/d"));
  auto f = e.open_writable("/d/new", open_mode::create_new);
  ASSERT_TRUE(f);
  ASSERT_TRUE((*f)->append(bytes_of("x")));
  ASSERT_TRUE((*f)->sync());
  e.crash();
  e.restart();
  EXPECT_FALSE(e.file_exists("/d/new"));
}

TEST(mem_env, halted_after_crash_until_restart) {
  mem_env e;
  ASSERT_TRUE(e.create_dirs("/d"));
  e.crash();
  auto f = e.open_writable("/d/x", open_mode::create_new);
  ASSERT_FALSE(f);
  EXPECT_EQ(errc_of(f.err()), errc::io_error);
  e.restart();
  EXPECT_TRUE(e.open_writable("/d/x", open_mode::create_new));
}

TEST(mem_env, capacity_gives_a_partial_write_then_enospc) {
  mem_env e;
  ASSERT_TRUE(e.create_dirs("/d"));
  auto f = e.open_writable("/d/a", open_mode::create_new);
  ASSERT_TRUE(f);
  e.set_capacity(6);
  auto st = (*f)->append(bytes_of("0123456789"));
  ASSERT_FALSE(st);
  EXPECT_EQ(errc_of(st.err()), errc::no_space);
  EXPECT_EQ((*f)->size(), 6u);
  ASSERT_TRUE((*f)->truncate(2));
  EXPECT_EQ(read_all(e, "/d/a"), "01");
  e.set_capacity(std::nullopt);
  EXPECT_TRUE((*f)->append(bytes_of("xyz")));
  EXPECT_EQ(read_all(e, "/d/a"), "01xyz");
}

TEST(mem_env, injected_sync_and_write_errors) {
  mem_env e;
  ASSERT_TRUE(e.create_dirs("/d"));
  auto f = e.open_writable("/d/a", open_mode::create_new);
  ASSERT_TRUE(f);
  ASSERT_TRUE(e.sync_dir("/d"));
  ASSERT_TRUE((*f)->append(bytes_of("abc")));
  e.fail_next_syncs(1);
  auto st = (*f)->sync();
  ASSERT_FALSE(st);
  EXPECT_EQ(errc_of(st.err()), errc::io_error);
  EXPECT_TRUE((*f)->sync());
  e.set_write_error(true);
  EXPECT_FALSE((*f)->append(bytes_of("d")));
  EXPECT_EQ((*f)->size(), 3u);
}

TEST(mem_env, rename_replaces_and_list_dir_sees_names) {
  mem_env e;
  ASSERT_TRUE(e.create_dirs("/d/sub"));
  e.set_contents("/d/a.tmp", bytes_of("new"));
  e.set_contents("/d/a", bytes_of("old"));
  ASSERT_TRUE(e.rename_file("/d/a.tmp", "/d/a"));
  EXPECT_EQ(read_all(e, "/d/a"), "new");
  auto names = e.list_dir("/d");
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, std::vector<std::string>{"a"});
  EXPECT_FALSE(e.list_dir("/nope"));
}

// storage::replace_file (env.h), checked on mem_env: a failed write leaves the old file and a temp file,
// which the next call removes; a crash after it returns keeps the new file.
TEST(env, replace_file_is_old_or_new_and_cleans_up_a_left_temp_file) {
  mem_env e;
  ASSERT_TRUE(e.create_dirs("/d"));
  ASSERT_TRUE(e.sync_dir("/d"));
  ASSERT_TRUE(replace_file(e, "/d/f", bytes_of("old")));
  e.fail_next_syncs(1);
  ASSERT_FALSE(replace_file(e, "/d/f", bytes_of("new")));
  EXPECT_EQ(read_all(e, "/d/f"), "old");
  EXPECT_TRUE(e.file_exists("/d/f.tmp"));
  ASSERT_TRUE(replace_file(e, "/d/f", bytes_of("new")));
  EXPECT_FALSE(e.file_exists("/d/f.tmp"));
  e.crash();
  e.restart();
  EXPECT_EQ(read_all(e, "/d/f"), "new");
}

}  // namespace
}  // namespace weir::storage
