// stream_runner: runs one parsed `weir stream` command against a server and says how it ended (the exit
// code). Reads its input from `in`, writes results to `out` and errors to `err`; nothing else global.
#pragma once

#include <cstdio>

#include "cli/exit_code.h"
#include "cli/stream_args.h"

namespace weir::cli {

exit_code run_stream_command(const stream_args& args, std::FILE* in, std::FILE* out, std::FILE* err);

}  // namespace weir::cli
