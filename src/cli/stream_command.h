// `weir stream`: registers the command-line client on the weir CLI (src/server/main.cc).
#pragma once

#include <CLI/CLI.hpp>

namespace weir::cli {

// Adds `stream` to `app`. Everything after `stream` is parsed by stream_args (so that usage errors end
// with exit code 2 and help shows the exit codes); the callback runs the command and exits with its code.
void register_command(CLI::App& app);

}  // namespace weir::cli
