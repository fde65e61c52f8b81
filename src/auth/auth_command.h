// `weir auth`: helpers for the operator. `weir auth gen-key` prints a new API key and the config block
// that admits it; `weir auth hash-key` reads a key on standard input (not the command line, which other
// users can see in ps and the shell keeps in its history) and prints its SHA-256 for the config file.
#pragma once

#include <CLI/CLI.hpp>

namespace weir::auth {

void register_command(CLI::App& app);

}  // namespace weir::auth
