// The default crash test (label `crash`): a few SIGKILL / restart cycles of a real `weir serve` under
// concurrent load. What it checks and how to rerun a seed: docs/crash-testing.md.
#include <gtest/gtest.h>

#include "crash/crash_scenario.h"

namespace weir::crash_test {
namespace {

TEST(crash, acknowledged_writes_survive_sigkill_few_cycles) {
  scenario_options o;
  o.cycles = 3;
  run_crash_scenario(o);
}

}  // namespace
}  // namespace weir::crash_test
