// exit_code: what `weir stream` tells a shell script when it ends. One mapping from an HTTP status (or a
// transport failure) to a code, used by every command; documented in `weir stream --help` and README.md.
#pragma once

#include <string_view>

namespace weir::cli {

enum class exit_code : int {
  ok = 0,
  failure = 1,       // a local problem: a file that cannot be read, a malformed response
  usage = 2,         // bad command line
  not_found = 3,     // 404, or 410 (the stream is deleted but its forks still hold its data)
  conflict = 4,      // 409: exists with another configuration, closed, content type mismatch
  network = 5,       // no connection, reset, timeout: no HTTP response at all
  server_error = 6,  // any other status the command did not expect (400, 413, 429, 5xx, ...)
};

// The exit code for a response with this status (2xx: ok).
exit_code exit_code_for_status(int status);

// A short name for --json error output: "not_found", "conflict", "network", ...
std::string_view exit_code_name(exit_code c);

// The exit-code table, as printed in --help.
std::string_view exit_code_help();

}  // namespace weir::cli
