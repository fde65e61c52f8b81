#include "cli/exit_code.h"

#include <gtest/gtest.h>

namespace weir::cli {
namespace {

TEST(exit_code, statuses_map_to_distinct_kinds) {
  EXPECT_EQ(exit_code_for_status(200), exit_code::ok);
  EXPECT_EQ(exit_code_for_status(201), exit_code::ok);
  EXPECT_EQ(exit_code_for_status(204), exit_code::ok);
  EXPECT_EQ(exit_code_for_status(404), exit_code::not_found);
  EXPECT_EQ(exit_code_for_status(410), exit_code::not_found);
  EXPECT_EQ(exit_code_for_status(409), exit_code::conflict);
  EXPECT_EQ(exit_code_for_status(400), exit_code::server_error);
  EXPECT_EQ(exit_code_for_status(503), exit_code::server_error);
  EXPECT_EQ(static_cast<int>(exit_code::usage), 2);
  EXPECT_EQ(static_cast<int>(exit_code::not_found), 3);
  EXPECT_EQ(static_cast<int>(exit_code::conflict), 4);
  EXPECT_EQ(static_cast<int>(exit_code::network), 5);
}

TEST(exit_code, every_code_is_in_the_help_table) {
  for (auto c : {exit_code::ok, exit_code::failure, exit_code::usage, exit_code::not_found,
                 exit_code::conflict, exit_code::network, exit_code::server_error}) {
    const auto line = "  " + std::to_string(static_cast<int>(c)) + "  ";
    EXPECT_NE(exit_code_help().find(line), std::string_view::npos) << line;
    EXPECT_FALSE(exit_code_name(c).empty());
  }
}

}  // namespace
}  // namespace weir::cli
