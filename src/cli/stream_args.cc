#include "cli/stream_args.h"

#include <algorithm>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/exit_code.h"

namespace weir::cli {
namespace {

constexpr const char* description =
    "weir stream: create, write, read and follow durable streams from a shell.\n"
    "\n"
    "STREAM is a name (put under the --server URL's path, /v1/stream by default: `orders` is\n"
    "/v1/stream/orders), a full path on the server starting with '/' (`/v1/stream/orders`, used as\n"
    "given), or a whole URL (`http://127.0.0.1:4437/v1/stream/orders`, which overrides --server).\n";

constexpr const char* footer_text =
    "Output: results go to standard output (read: the stream's bytes; JSON streams one message per\n"
    "line); with --json one JSON object per line instead. Errors go to standard error (and with --json\n"
    "also as {\"error\":...} to standard output).\n"
    "\n"
    "Examples:\n"
    "  weir stream create logs --content-type text/plain --ttl 3600\n"
    "  tail -f app.log | weir stream append logs --lines\n"
    "  weir stream read logs --follow\n"
    "  weir stream head logs --json\n"
    "  weir stream fork logs-copy --from logs\n";

struct raw_values {
  std::uint64_t ttl = 0;
  std::uint64_t sub_offset = 0;
  std::string data;
};

void add_stream_arg(CLI::App* sub, stream_args& a, const char* what = "the stream: NAME, /PATH or URL") {
  sub->add_option("STREAM", a.stream, what)->required();
}

void add_expiry(CLI::App* sub, stream_args& a, raw_values& raw) {
  auto* ttl = sub->add_option("--ttl", raw.ttl, "Sliding time to live in seconds (Stream-TTL)");
  auto* exp = sub->add_option("--expires-at", a.expires_at, "Absolute expiry, RFC 3339 (Stream-Expires-At)");
  ttl->excludes(exp);
}

}  // namespace

parse_outcome parse_stream_args(const std::vector<std::string>& argv) {
  parse_outcome out;
  stream_args& a = out.args;
  raw_values raw;

  CLI::App app{description, "weir stream"};
  app.footer(std::string(footer_text) + "\n" + std::string(exit_code_help()));
  app.require_subcommand(1, 1);
  app.fallthrough();  // global options may follow the command
  app.add_option("--server", a.server, "Server URL: http://HOST[:PORT][/PREFIX]")->capture_default_str();
  app.add_flag("--json", a.json, "Machine-readable output: one JSON object per line");
  app.add_option("--timeout-ms", a.timeout_ms, "Give up on a request unanswered this long (exit code 5)")
      ->capture_default_str();
  app.add_option("--token", a.token,
                 "Bearer token (API key or JWT) for a node with access control; better in the WEIR_TOKEN "
                 "variable, since other users can see arguments in ps")
      ->envname("WEIR_TOKEN");

  auto* create = app.add_subcommand("create", "Create a stream (PUT); an identical existing one is fine");
  add_stream_arg(create, a);
  create->add_option("--content-type", a.content_type,
                     "Content type (server default: application/octet-stream)");
  add_expiry(create, a, raw);
  create->add_flag("--closed", a.closed, "Create it closed (its initial body, if any, is all it will hold)");
  auto* create_data = create->add_option("DATA", raw.data, "Initial content");
  create->add_option("--file", a.file, "Initial content from a file ('-': standard input)")
      ->excludes(create_data);

  auto* append = app.add_subcommand("append", "Append to a stream (POST)");
  add_stream_arg(append, a);
  auto* append_data = append->add_option("DATA", raw.data, "What to append (default: standard input)");
  append->add_option("--file", a.file, "Append a file's content ('-': standard input)")
      ->excludes(append_data);
  append->add_flag("--lines", a.lines,
                   "One append per line of the input, each with its line end (blank lines are skipped)");
  append->add_option("--content-type", a.content_type,
                     "Content type (default: the stream's, asked with HEAD)");
  append->add_flag("--close", a.closed, "Close the stream with the (last) append");

  auto* read = app.add_subcommand("read", "Read a stream from an offset to its tail, or follow it");
  add_stream_arg(read, a);
  read->add_option("--offset", a.offset, "Where to start: -1 (the start), now (the tail) or an offset token")
      ->capture_default_str();
  read->add_flag("-f,--follow", a.follow,
                 "Keep reading new data as it arrives (SSE); reconnects from the last offset printed "
                 "until the stream is closed");

  auto* head =
      app.add_subcommand("head", "Show a stream's tail offset, content type, closed state and expiry");
  add_stream_arg(head, a);

  auto* close = app.add_subcommand("close", "Close a stream: no more appends (idempotent)");
  add_stream_arg(close, a);

  auto* remove = app.add_subcommand("delete", "Delete a stream");
  add_stream_arg(remove, a);

  auto* fork =
      app.add_subcommand("fork", "Create a stream that starts as a copy of another one up to an offset");
  add_stream_arg(fork, a, "the new stream: NAME, /PATH or URL");
  fork->add_option("--from", a.from, "The source stream: NAME, /PATH or URL (same server)")->required();
  fork->add_option("--offset", a.fork_offset, "Fork at this offset of the source (default: its tail)");
  auto* sub = fork->add_option("--sub-offset", raw.sub_offset,
                               "Bytes (JSON: messages) past --offset to inherit as well");
  fork->add_option("--content-type", a.content_type, "Must match the source's (default: the source's)");
  add_expiry(fork, a, raw);

  std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::ostringstream o, err;
    const int code = app.exit(e, o, err);
    if (code == 0) {
      out.what = parse_outcome::kind::help;
      out.text = o.str();
    } else {
      out.what = parse_outcome::kind::usage_error;
      out.text = err.str();
    }
    return out;
  }

  const std::pair<CLI::App*, stream_verb> verbs[] = {
      {create, stream_verb::create}, {append, stream_verb::append}, {read, stream_verb::read},
      {head, stream_verb::head},     {close, stream_verb::close},   {remove, stream_verb::remove},
      {fork, stream_verb::fork}};
  for (const auto& [cmd, verb] : verbs) {
    if (cmd->parsed()) a.verb = verb;
  }
  auto* chosen = app.get_subcommands().front();
  if (auto* o = chosen->get_option_no_throw("--ttl"); o && o->count() > 0) a.ttl_secs = raw.ttl;
  if (sub->count() > 0) a.fork_sub_offset = raw.sub_offset;
  if (auto* o = chosen->get_option_no_throw("DATA"); o && o->count() > 0) a.data = raw.data;
  if (a.offset.empty()) {
    out.what = parse_outcome::kind::usage_error;
    out.text = "--offset: give -1, now or an offset the server returned\n";
  }
  return out;
}

}  // namespace weir::cli
