// PLACEHOLDER until the benchmark issue lands: the subcommand exists but refuses to run.
#include "bench/bench_command.h"

#include <cstdio>
#include <cstdlib>

namespace weir::bench {
void register_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure Durable Streams servers (not implemented yet)");
  cmd->callback([] {
    std::fprintf(stderr, "weir bench: not implemented yet\n");
    std::exit(2);
  });
}
}  // namespace weir::bench
