// The deterministic-seed run of the log op-fuzzer (see log_fuzzer.h); log_fuzz_slow.cc runs it longer.
#include "log_fuzzer.h"

namespace weir::storage {
namespace {

TEST(log_fuzz, fixed_seeds) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    testing::log_fuzzer fuzzer(seed);
    auto s = fuzzer.run(1000);
    ASSERT_FALSE(HasFatalFailure()) << "seed " << seed;
    // The run must have exercised what it claims to check.
    EXPECT_GT(s.acked, 100u);
    EXPECT_GT(s.failed, 0u);
    EXPECT_GT(s.crashes, 5u);
    EXPECT_GT(s.torn_crashes, 0u);
    EXPECT_GT(s.checkpoints, 5u);
    EXPECT_GT(s.segments_max, 3u);
    EXPECT_GT(s.kept, 0u);
    EXPECT_GT(s.reclaimed, 0u);
    EXPECT_GT(s.reads_by_position, 0u);
    ::testing::Test::RecordProperty("seed_" + std::to_string(seed) + "_acked", static_cast<int>(s.acked));
  }
}

}  // namespace
}  // namespace weir::storage
