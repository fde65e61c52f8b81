#include "protocol/cursor.h"

#include <gtest/gtest.h>

namespace weir::protocol {
namespace {

TEST(cursor, interval_number_since_epoch) {
  EXPECT_EQ(next_cursor(cursor_epoch_ms, std::nullopt, 1), "0");
  EXPECT_EQ(next_cursor(cursor_epoch_ms + 20'000 * 1000 + 19'999, std::nullopt, 1), "1000");
}

TEST(cursor, older_or_garbage_client_cursor_gives_current) {
  std::int64_t now = cursor_epoch_ms + 20'000 * 1000;
  EXPECT_EQ(next_cursor(now, "999", 100), "1000");
  EXPECT_EQ(next_cursor(now, "abc", 100), "1000");
  EXPECT_EQ(next_cursor(now, "", 100), "1000");
}

TEST(cursor, collision_moves_strictly_forward_by_jitter) {
  std::int64_t now = cursor_epoch_ms + 20'000 * 1000;
  EXPECT_EQ(next_cursor(now, "1000", 1), "1001");     // at least one interval
  EXPECT_EQ(next_cursor(now, "1000", 3600), "1180");  // 3600 s = 180 intervals
  EXPECT_EQ(next_cursor(now, "5000", 21), "5002");    // a future cursor still advances
}

}  // namespace
}  // namespace weir::protocol
