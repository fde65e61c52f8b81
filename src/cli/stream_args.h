// stream_args: the command line of `weir stream`, parsed into values (no I/O, no network). The commands,
// their options and the exit codes are described by the --help text built here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weir::cli {

enum class stream_verb { create, append, read, head, close, remove, fork };

inline constexpr const char* default_server = "http://127.0.0.1:4437";

struct stream_args {
  stream_verb verb = stream_verb::head;
  std::string server = default_server;  // --server URL: http://HOST[:PORT][/PREFIX]
  std::string stream;                   // NAME, /PATH or http://HOST:PORT/PATH (stream_target.h)
  bool json = false;                    // machine-readable output
  unsigned timeout_ms = 30'000;         // for one request (not for a --follow stream)
  std::string token;                    // --token or WEIR_TOKEN: sent as Authorization: Bearer

  // create, fork, append
  std::string
      content_type;  // empty: the server's default (create), the source's (fork), the stream's (append)
  std::optional<std::uint64_t> ttl_secs;  // Stream-TTL
  std::string expires_at;                 // Stream-Expires-At (RFC 3339)
  bool closed = false;                    // create: created closed; append: closed with the last append

  // create, append: where the body comes from
  std::optional<std::string> data;  // the DATA argument
  std::string file;                 // --file PATH; "-" is standard input
  bool lines = false;               // append: one append per line of the input

  // read
  std::string offset = "-1";  // -1 (the start), now (the tail) or a token the server returned
  bool follow = false;        // SSE live tail, reconnecting on its own

  // fork
  std::string from;  // the source stream (same forms as `stream`)
  std::string fork_offset;
  std::optional<std::uint64_t> fork_sub_offset;
};

struct parse_outcome {
  enum class kind { run, help, usage_error };
  kind what = kind::run;
  stream_args args;
  std::string text;  // help: the help text; usage_error: what is wrong and how to get help
};

// `argv` holds the arguments after `weir stream`, in order.
parse_outcome parse_stream_args(const std::vector<std::string>& argv);

}  // namespace weir::cli
