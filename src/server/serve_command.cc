// PLACEHOLDER until the protocol issue lands: the subcommand exists but refuses to run.
#include "server/serve_command.h"

#include <cstdio>
#include <cstdlib>

namespace weir::server {
void register_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Run a weir node (not implemented yet)");
  cmd->callback([] {
    std::fprintf(stderr, "weir serve: not implemented yet\n");
    std::exit(2);
  });
}
}  // namespace weir::server
