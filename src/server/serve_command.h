// `weir serve`: registers the subcommand on the weir CLI.
#pragma once

#include <CLI/CLI.hpp>

namespace weir::server {
void register_command(CLI::App& app);
}  // namespace weir::server
