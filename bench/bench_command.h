// `weir bench`: registers the subcommand on the weir CLI.
#pragma once

#include <CLI/CLI.hpp>

namespace weir::bench {
// Adds `bench` to `app`; the returned callback runs it when chosen.
void register_command(CLI::App& app);
}  // namespace weir::bench
