// weir: the durable streams server. Subcommands: serve, bench, the stream commands, auth.
#include <CLI/CLI.hpp>

#include "app/serve_command.h"
#include "app/version.h"
#include "auth/auth_command.h"
#include "bench/bench_command.h"
#include "cli/stream_command.h"

int main(int argc, char** argv) {
  CLI::App app{"weir: a durable streams server (Durable Streams Protocol over HTTP/1.1)", "weir"};
  app.set_version_flag("--version",
                       std::string("weir ") + weir::version + " (commit " + weir::git_commit + ")");
  app.require_subcommand(0, 1);
  weir::app::register_command(app);
  weir::bench::register_command(app);
  weir::cli::register_command(app);
  weir::auth::register_command(app);
  CLI11_PARSE(app, argc, argv);
  if (app.get_subcommands().empty()) {
    std::fputs(app.help().c_str(), stdout);
  }
  return 0;
}
