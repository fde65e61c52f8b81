#include "cli/stream_runner.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "cli/command_context.h"
#include "cli/output_format.h"

namespace weir::cli {

bool header_is_true(const client::http_response& r, std::string_view name) {
  const auto* v = r.header(name);
  if (v == nullptr || v->size() != 4) return false;
  std::string lower(*v);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower == "true";
}

exit_code command_context::fail(const client::http_response& r) const {
  if (!r.ok()) return fail(exit_code::network, r.error);
  const exit_code code = exit_code_for_status(r.status);
  // The server's short reason body (PROTOCOL.md says clients should not rely on it; people read it).
  std::string message = r.body.substr(0, 1000);
  if (message.empty() && header_is_true(r, "stream-closed")) message = "the stream is closed";
  std::string text = format_error_text(command, target.path, r.status, message);
  std::fputs(text.c_str(), err);
  if (args.json)
    print(format_error_json(code == exit_code::ok ? exit_code::server_error : code, target.path, r.status,
                            message));
  return code == exit_code::ok ? exit_code::server_error : code;  // a 2xx the command did not expect
}

exit_code command_context::fail(exit_code code, std::string_view message) const {
  std::string text = format_error_text(command, target.path, 0, message);
  std::fputs(text.c_str(), err);
  if (args.json) print(format_error_json(code, target.path, 0, message));
  return code;
}

namespace {

// The body of create or append: the DATA argument, --file (or "-"), or (append only) standard input.
bool read_body(const command_context& ctx, bool stdin_by_default, std::string& body, std::string& why) {
  const auto& a = ctx.args;
  if (a.data) {
    body = *a.data;
    return true;
  }
  if (a.file.empty() && !stdin_by_default) return true;
  if (a.file.empty() || a.file == "-") {
    char buf[64 * 1024];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, ctx.in)) > 0;) body.append(buf, n);
    if (std::ferror(ctx.in)) {
      why = "cannot read standard input";
      return false;
    }
    return true;
  }
  std::ifstream f(a.file, std::ios::binary);
  if (!f) {
    why = fmt::format("cannot open {}", a.file);
    return false;
  }
  body.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  if (f.bad()) {
    why = fmt::format("cannot read {}", a.file);
    return false;
  }
  return true;
}

void add_expiry(const stream_args& a, request_spec& spec) {
  if (a.ttl_secs) spec.headers.emplace_back("Stream-TTL", std::to_string(*a.ttl_secs));
  if (!a.expires_at.empty()) spec.headers.emplace_back("Stream-Expires-At", a.expires_at);
}

exit_code run_create(command_context& ctx) {
  const auto& a = ctx.args;
  std::string body, why;
  if (!read_body(ctx, false, body, why)) return ctx.fail(exit_code::failure, why);
  request_spec spec{.method = "PUT", .with_body = true, .body_size = body.size()};
  if (!a.content_type.empty()) spec.headers.emplace_back("Content-Type", a.content_type);
  add_expiry(a, spec);
  if (a.closed) spec.headers.emplace_back("Stream-Closed", "true");
  const auto r = ctx.send(spec, body);
  if (!r.ok() || (r.status != 201 && r.status != 200)) return ctx.fail(r);
  ctx.print(format_created(ctx.target.path, r.status == 201, r.next_offset,
                           header_is_true(r, "stream-closed"), a.json));
  return exit_code::ok;
}

exit_code run_fork(command_context& ctx) {
  const auto& a = ctx.args;
  auto source = resolve_target(a.server, a.from);
  if (!source) return ctx.fail(exit_code::usage, fmt::format("--from: {}", source.err().reason));
  // PROTOCOL.md 4.2: Stream-Forked-From is a path on the same server.
  if (source->server.host != ctx.target.server.host || source->server.port != ctx.target.server.port) {
    return ctx.fail(exit_code::usage, "--from: the source must be on the same server as the fork");
  }
  request_spec spec{.method = "PUT", .with_body = true, .body_size = 0};
  spec.headers.emplace_back("Stream-Forked-From", source->path);
  if (!a.fork_offset.empty()) spec.headers.emplace_back("Stream-Fork-Offset", a.fork_offset);
  if (a.fork_sub_offset)
    spec.headers.emplace_back("Stream-Fork-Sub-Offset", std::to_string(*a.fork_sub_offset));
  if (!a.content_type.empty()) spec.headers.emplace_back("Content-Type", a.content_type);
  add_expiry(a, spec);
  const auto r = ctx.send(spec);
  if (!r.ok() || (r.status != 201 && r.status != 200)) return ctx.fail(r);
  ctx.print(format_created(ctx.target.path, r.status == 201, r.next_offset,
                           header_is_true(r, "stream-closed"), a.json));
  return exit_code::ok;
}

exit_code run_head(command_context& ctx) {
  const auto r = ctx.send({.method = "HEAD"});
  if (!r.ok() || r.status != 200) return ctx.fail(r);
  stream_info info;
  info.path = ctx.target.path;
  info.offset = r.next_offset;
  if (const auto* ct = r.header("content-type")) info.content_type = *ct;
  info.closed = header_is_true(r, "stream-closed");
  if (const auto* ttl = r.header("stream-ttl")) info.ttl = *ttl;
  if (const auto* exp = r.header("stream-expires-at")) info.expires_at = *exp;
  ctx.print(format_head(info, ctx.args.json));
  return exit_code::ok;
}

exit_code run_close(command_context& ctx) {
  // PROTOCOL.md 5.3: a close is a POST with Stream-Closed: true and an empty body.
  const auto r = ctx.send({.method = "POST", .headers = {{"Stream-Closed", "true"}}, .with_body = true});
  if (!r.ok() || (r.status != 204 && r.status != 200)) return ctx.fail(r);
  ctx.print(format_closed(ctx.target.path, r.next_offset, ctx.args.json));
  return exit_code::ok;
}

exit_code run_delete(command_context& ctx) {
  const auto r = ctx.send({.method = "DELETE"});
  if (!r.ok() || (r.status != 204 && r.status != 200)) return ctx.fail(r);
  ctx.print(format_deleted(ctx.target.path, ctx.args.json));
  return exit_code::ok;
}

// The stream's content type, for appends that did not name one (PROTOCOL.md 5.2: it must match).
exit_code stream_content_type(command_context& ctx, std::string& type) {
  if (!ctx.args.content_type.empty()) {
    type = ctx.args.content_type;
    return exit_code::ok;
  }
  const auto r = ctx.send({.method = "HEAD"});
  if (!r.ok() || r.status != 200) return ctx.fail(r);
  if (const auto* ct = r.header("content-type")) type = *ct;
  return exit_code::ok;
}

struct append_state {
  std::size_t appends = 0;
  std::string offset;
  bool closed = false;
};

// One POST; `close` adds Stream-Closed: true (append-and-close, PROTOCOL.md 5.2).
exit_code post(command_context& ctx, const std::string& type, std::string_view body, bool close,
               append_state& st) {
  request_spec spec{.method = "POST", .with_body = true, .body_size = body.size()};
  if (!body.empty()) spec.headers.emplace_back("Content-Type", type);
  if (close) spec.headers.emplace_back("Stream-Closed", "true");
  const auto r = ctx.send(spec, body);
  if (!r.ok() || (r.status != 204 && r.status != 200)) {
    if (st.appends > 0) {
      std::fputs(
          fmt::format("weir stream append {}: {} append(s) were made before this error, up to offset {}\n",
                      ctx.target.path, st.appends, st.offset)
              .c_str(),
          ctx.err);
    }
    return ctx.fail(r);
  }
  if (!body.empty()) ++st.appends;
  st.offset = r.next_offset;
  st.closed = header_is_true(r, "stream-closed");
  return exit_code::ok;
}

// --lines: every line (with its line end) is one append, sent as soon as it is read, so that
// `tail -f log | weir stream append s --lines` streams. Blank lines are skipped.
exit_code append_lines(command_context& ctx, const std::string& type, append_state& st) {
  const auto& a = ctx.args;
  auto one = [&](std::string_view line) -> exit_code {
    std::string_view bare = line;
    while (!bare.empty() && (bare.back() == '\n' || bare.back() == '\r')) bare.remove_suffix(1);
    if (bare.empty()) return exit_code::ok;
    return post(ctx, type, line, false, st);
  };
  if (a.data) {
    std::string_view rest = *a.data;
    while (!rest.empty()) {
      const auto nl = rest.find('\n');
      const auto len = nl == std::string_view::npos ? rest.size() : nl + 1;
      if (auto c = one(rest.substr(0, len)); c != exit_code::ok) return c;
      rest.remove_prefix(len);
    }
    return exit_code::ok;
  }
  std::FILE* f = ctx.in;
  const bool own = !a.file.empty() && a.file != "-";
  if (own && (f = std::fopen(a.file.c_str(), "rb")) == nullptr) {
    return ctx.fail(exit_code::failure, fmt::format("cannot open {}", a.file));
  }
  char* line = nullptr;
  std::size_t cap = 0;
  exit_code code = exit_code::ok;
  for (ssize_t n; (n = ::getline(&line, &cap, f)) >= 0;) {
    if ((code = one(std::string_view(line, static_cast<std::size_t>(n)))) != exit_code::ok) break;
  }
  if (code == exit_code::ok && std::ferror(f)) code = ctx.fail(exit_code::failure, "cannot read the input");
  std::free(line);
  if (own) std::fclose(f);
  return code;
}

exit_code run_append(command_context& ctx) {
  const auto& a = ctx.args;
  std::string type;
  if (auto c = stream_content_type(ctx, type); c != exit_code::ok) return c;
  append_state st;
  if (a.lines) {
    if (auto c = append_lines(ctx, type, st); c != exit_code::ok) return c;
    if (a.closed) {
      if (auto c = post(ctx, type, {}, true, st); c != exit_code::ok) return c;
    } else if (st.appends == 0) {
      return ctx.fail(exit_code::usage, "nothing to append: the input has no non-blank line");
    }
  } else {
    std::string body, why;
    if (!read_body(ctx, true, body, why)) return ctx.fail(exit_code::failure, why);
    // PROTOCOL.md 5.2: an empty POST body is only valid as a close.
    if (body.empty() && !a.closed) return ctx.fail(exit_code::usage, "nothing to append: the input is empty");
    if (auto c = post(ctx, type, body, a.closed, st); c != exit_code::ok) return c;
  }
  ctx.print(format_appended(ctx.target.path, st.offset, st.appends, st.closed, a.json));
  return exit_code::ok;
}

std::string_view verb_name(stream_verb v) {
  switch (v) {
    case stream_verb::create:
      return "create";
    case stream_verb::append:
      return "append";
    case stream_verb::read:
      return "read";
    case stream_verb::head:
      return "head";
    case stream_verb::close:
      return "close";
    case stream_verb::remove:
      return "delete";
    case stream_verb::fork:
      return "fork";
  }
  return "?";
}

}  // namespace

exit_code run_stream_command(const stream_args& args, std::FILE* in, std::FILE* out, std::FILE* err) {
  const auto name = verb_name(args.verb);
  auto target = resolve_target(args.server, args.stream);
  if (!target) {
    std::fputs(fmt::format("weir stream {}: {}\n", name, target.err().reason).c_str(), err);
    return exit_code::usage;
  }
  target->token = args.token;
  for (std::string_view v : {std::string_view(args.content_type), std::string_view(args.expires_at),
                             std::string_view(args.fork_offset), std::string_view(args.token)}) {
    if (!header_value_ok(v)) {
      std::fputs(fmt::format("weir stream {}: an option value holds a control character\n", name).c_str(),
                 err);
      return exit_code::usage;
    }
  }
  sync_connection conn(target->server);
  command_context ctx{args, name, *target, conn, in, out, err};
  switch (args.verb) {
    case stream_verb::create:
      return run_create(ctx);
    case stream_verb::append:
      return run_append(ctx);
    case stream_verb::read:
      return run_read(ctx);
    case stream_verb::head:
      return run_head(ctx);
    case stream_verb::close:
      return run_close(ctx);
    case stream_verb::remove:
      return run_delete(ctx);
    case stream_verb::fork:
      return run_fork(ctx);
  }
  return exit_code::usage;
}

}  // namespace weir::cli
