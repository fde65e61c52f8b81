// Errors say whose code they carry: each module's errc has a std::error_category, a code read as
// another module's fails loudly, and two enums never share a category by accident.
#include <gtest/gtest.h>

#include "base/result.h"
#include "raft/types.h"
#include "replica/errc.h"
#include "storage/types.h"

namespace weir {
namespace {

enum class first_errc { broken = 1 };
enum class second_errc { broken = 1 };

TEST(error_category, a_module_error_names_its_module_and_its_code) {
  error e = make_error(storage::errc::no_space, "disk full");
  EXPECT_STREQ(e.cat().name(), "storage");
  EXPECT_EQ(e.ec().message(), "no_space");
  EXPECT_TRUE(e.is<storage::errc>());
  EXPECT_FALSE(e.is<raft::errc>());
  EXPECT_EQ(e.as<storage::errc>(), storage::errc::no_space);

  error r = make_error(replica::errc::cluster_unavailable);
  EXPECT_STREQ(r.cat().name(), "replica");
  EXPECT_EQ(r.ec().message(), "cluster_unavailable");
  EXPECT_STREQ(make_error(raft::errc::malformed).cat().name(), "raft");
}

TEST(error_category, the_same_number_of_two_modules_is_two_different_codes) {
  error io = make_error(storage::errc::io_error);  // 1
  error bad = make_error(raft::errc::malformed);   // 1 too
  EXPECT_EQ(io.code, bad.code);
  EXPECT_NE(io.ec(), bad.ec());
  // Enums without a named category get one of their own, named after the enum.
  error a = make_error(first_errc::broken);
  error b = make_error(second_errc::broken);
  EXPECT_NE(&a.cat(), &b.cat());
  EXPECT_NE(std::string(a.cat().name()).find("first_errc"), std::string::npos) << a.cat().name();
  EXPECT_TRUE(a.is<first_errc>());
  EXPECT_FALSE(a.is<second_errc>());
}

TEST(error_category, plain_and_posix_errors_keep_their_own_categories) {
  error plain{1, "a failure"};
  EXPECT_STREQ(plain.cat().name(), "weir");
  error posix = make_error(std::errc::io_error, "read");
  EXPECT_EQ(&posix.cat(), &std::generic_category());
  EXPECT_EQ(posix.ec(), std::errc::io_error);
}

TEST(error_category_death, reading_another_modules_code_fails_loudly) {
  error e = make_error(storage::errc::corruption, "bad crc");
  EXPECT_DEATH((void)e.as<raft::errc>(), "storage.*read as.*raft");
}

}  // namespace
}  // namespace weir
