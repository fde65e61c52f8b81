#include "storage/dir_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "storage/types.h"

namespace weir::storage {
namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(dir_lock, a_second_holder_is_refused_with_the_directory_and_the_pid) {
  auto dir = fresh_dir("weir-dir-lock");
  auto first = dir_lock::acquire(dir.string());
  ASSERT_TRUE(first) << first.err().reason;
  // flock is per open file description: a second open in this process conflicts like another process.
  auto second = dir_lock::acquire(dir.string());
  ASSERT_FALSE(second);
  EXPECT_EQ(errc_of(second.err()), errc::busy);
  EXPECT_NE(second.err().reason.find(dir.string()), std::string::npos) << second.err().reason;
  EXPECT_NE(second.err().reason.find("pid " + std::to_string(::getpid())), std::string::npos)
      << second.err().reason;
  std::filesystem::remove_all(dir);
}

TEST(dir_lock, released_when_the_holder_goes_away) {
  auto dir = fresh_dir("weir-dir-lock-release");
  {
    auto first = dir_lock::acquire(dir.string());
    ASSERT_TRUE(first);
  }
  auto again = dir_lock::acquire(dir.string());
  ASSERT_TRUE(again) << again.err().reason;
  std::filesystem::remove_all(dir);
}

// A process that dies holding the lock (kill -9 has the same effect) leaves nothing to clean by hand,
// even though its LOCK file, with its PID, stays behind.
TEST(dir_lock, a_dead_holder_leaves_no_stale_lock) {
  auto dir = fresh_dir("weir-dir-lock-dead");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto l = dir_lock::acquire(dir.string());
    ::_exit(l ? 0 : 1);  // exits holding it: the kernel releases the flock
  }
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), 0);
  ASSERT_TRUE(std::filesystem::exists(dir / "LOCK"));
  auto l = dir_lock::acquire(dir.string());
  ASSERT_TRUE(l) << l.err().reason;
  std::ifstream in(dir / "LOCK");
  std::string pid;
  in >> pid;
  EXPECT_EQ(pid, std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
}

TEST(dir_lock, a_missing_directory_is_an_error_value) {
  auto l = dir_lock::acquire("/nonexistent-weir-dir/x");
  ASSERT_FALSE(l);
  EXPECT_NE(l.err().reason.find("LOCK"), std::string::npos);
}

}  // namespace
}  // namespace weir::storage
