// The long crash test (label `slow`): the same scenario as crash_test.cc for 24 kill / restart cycles on
// one growing data directory. Run it with `ctest -L slow` (docs/crash-testing.md).
#include <gtest/gtest.h>

#include "crash/crash_scenario.h"

namespace weir::crash_test {
namespace {

TEST(crash_slow, acknowledged_writes_survive_sigkill_many_cycles) {
  scenario_options o;
  o.cycles = 24;
  run_crash_scenario(o);
}

}  // namespace
}  // namespace weir::crash_test
