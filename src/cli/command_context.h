// command_context: what every `weir stream` command works with: its arguments, the resolved stream, the
// connection and the output files; and the one place where a failed exchange becomes an exit code and
// an error message. Used by stream_runner.cc (writes, head, delete) and read_command.cc.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "cli/exit_code.h"
#include "cli/request_head.h"
#include "cli/stream_args.h"
#include "cli/stream_target.h"
#include "cli/sync_connection.h"

namespace weir::cli {

struct command_context {
  const stream_args& args;
  std::string_view command;  // "create", "append", ...
  stream_target target;
  sync_connection& conn;
  std::FILE* in;
  std::FILE* out;
  std::FILE* err;

  // Sends a request with the command's timeout.
  client::http_response send(const request_spec& spec, std::string_view body = {}) {
    return conn.request(format_head(target, spec), body, args.timeout_ms);
  }
  // Writes `s` to standard output at once (a script may be reading line by line).
  void print(std::string_view s) const {
    if (s.empty()) return;
    std::fwrite(s.data(), 1, s.size(), out);
    std::fflush(out);
  }
  // Reports a transport failure or an unexpected status and returns its exit code.
  exit_code fail(const client::http_response& r) const;
  // Reports a local or protocol problem with the given exit code.
  exit_code fail(exit_code code, std::string_view message) const;
};

// True when the response carries `name: true` (PROTOCOL.md 4.1: case-insensitive "true" only).
bool header_is_true(const client::http_response& r, std::string_view name);

// read and read --follow (read_command.cc).
exit_code run_read(command_context& ctx);

}  // namespace weir::cli
