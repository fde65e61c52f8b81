// The long run of the log op-fuzzer (label `slow`): many seeds, more operations each. WEIR_FUZZ_SEEDS in
// the environment sets how many seeds (default 40); the seeds start at 1000 so they differ from the unit run.
#include <cstdlib>

#include "log_fuzzer.h"

namespace weir::storage {
namespace {

TEST(log_fuzz_slow, many_seeds) {
  int seeds = 40;
  if (const char* s = std::getenv("WEIR_FUZZ_SEEDS")) seeds = std::max(1, std::atoi(s));
  std::uint64_t acked = 0;
  for (int i = 0; i < seeds; ++i) {
    std::uint64_t seed = 1000 + static_cast<std::uint64_t>(i);
    testing::log_fuzzer fuzzer(seed);
    auto s = fuzzer.run(5000);
    ASSERT_FALSE(HasFatalFailure()) << "seed " << seed;
    acked += s.acked;
  }
  EXPECT_GT(acked, 1000u);
}

}  // namespace
}  // namespace weir::storage
