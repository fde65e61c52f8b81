#include "cli/stream_command.h"

#include <cstdio>
#include <cstdlib>

#include "cli/stream_args.h"
#include "cli/stream_runner.h"

namespace weir::cli {
namespace {

int run(const std::vector<std::string>& argv) {
  const auto parsed = parse_stream_args(argv);
  switch (parsed.what) {
    case parse_outcome::kind::help:
      std::fputs(parsed.text.c_str(), stdout);
      return 0;
    case parse_outcome::kind::usage_error:
      std::fputs(parsed.text.c_str(), stderr);
      return static_cast<int>(exit_code::usage);
    case parse_outcome::kind::run:
      break;
  }
  return static_cast<int>(run_stream_command(parsed.args, stdin, stdout, stderr));
}

}  // namespace

void register_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("stream",
                                 "Command-line client: create, append, read (--follow), head, close, delete, "
                                 "fork (weir stream --help)");
  // All of the arguments go to stream_args, --help included.
  cmd->prefix_command();
  cmd->set_help_flag();
  cmd->callback([cmd] {
    const int code = run(cmd->remaining());
    std::fflush(stdout);
    std::exit(code);
  });
}

}  // namespace weir::cli
