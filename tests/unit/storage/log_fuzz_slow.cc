// The long run of the log op-fuzzer (label `slow`): many seeds, more operations each. In the environment,
// WEIR_FUZZ_SEEDS sets how many seeds (default 40) and WEIR_FUZZ_FIRST_SEED the first one (default 1000,
// so they differ from the unit run); a failure names its seed, to rerun it alone.
#include <cstdlib>

#include "log_fuzzer.h"

namespace weir::storage {
namespace {

TEST(log_fuzz_slow, many_seeds) {
  int seeds = 40;
  std::uint64_t first = 1000;
  if (const char* s = std::getenv("WEIR_FUZZ_SEEDS")) seeds = std::max(1, std::atoi(s));
  if (const char* s = std::getenv("WEIR_FUZZ_FIRST_SEED")) first = std::strtoull(s, nullptr, 10);
  std::uint64_t acked = 0;
  for (int i = 0; i < seeds; ++i) {
    std::uint64_t seed = first + static_cast<std::uint64_t>(i);
    testing::log_fuzzer fuzzer(seed);
    auto s = fuzzer.run(5000);
    ASSERT_FALSE(HasFatalFailure()) << "seed " << seed;
    acked += s.acked;
  }
  EXPECT_GT(acked, 1000u);
}

}  // namespace
}  // namespace weir::storage
