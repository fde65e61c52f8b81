#include "cli/exit_code.h"

namespace weir::cli {

exit_code exit_code_for_status(int status) {
  if (status >= 200 && status < 300) return exit_code::ok;
  // PROTOCOL.md 4.2: a soft-deleted stream answers 410 to every direct operation; for a user it is gone.
  if (status == 404 || status == 410) return exit_code::not_found;
  if (status == 409) return exit_code::conflict;
  return exit_code::server_error;
}

std::string_view exit_code_name(exit_code c) {
  switch (c) {
    case exit_code::ok:
      return "ok";
    case exit_code::failure:
      return "failure";
    case exit_code::usage:
      return "usage";
    case exit_code::not_found:
      return "not_found";
    case exit_code::conflict:
      return "conflict";
    case exit_code::network:
      return "network";
    case exit_code::server_error:
      return "server_error";
  }
  return "failure";
}

std::string_view exit_code_help() {
  return "Exit codes:\n"
         "  0  ok\n"
         "  1  local failure (a file that cannot be read, a malformed response)\n"
         "  2  bad usage\n"
         "  3  not found (404, or 410 for a deleted stream whose forks keep it)\n"
         "  4  conflict (409: exists with another configuration, stream closed, content type mismatch)\n"
         "  5  network error (connection refused or reset, timeout)\n"
         "  6  any other server error (400, 413, 429, 5xx, ...)\n";
}

}  // namespace weir::cli
