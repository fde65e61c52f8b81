#include "cli/output_format.h"

#include <charconv>

#include <fmt/format.h>

#include "base/base64.h"
#include "base/json_writer.h"
#include "http/status_text.h"

namespace weir::cli {
namespace {

std::string line(json_writer& w) {
  std::string s = w.take();
  s += '\n';
  return s;
}

}  // namespace

std::string format_head(const stream_info& info, bool json) {
  if (!json) {
    std::string s = fmt::format("offset: {}\ncontent_type: {}\nclosed: {}\n", info.offset, info.content_type,
                                info.closed ? "true" : "false");
    if (info.ttl) s += fmt::format("ttl: {}\n", *info.ttl);
    if (info.expires_at) s += fmt::format("expires_at: {}\n", *info.expires_at);
    return s;
  }
  json_writer w;
  w.begin_object().key("path").value(info.path).key("offset").value(info.offset);
  w.key("content_type").value(info.content_type).key("closed").value(info.closed);
  w.key("ttl");
  std::int64_t ttl = 0;
  if (info.ttl &&
      std::from_chars(info.ttl->data(), info.ttl->data() + info.ttl->size(), ttl).ec == std::errc{}) {
    w.value(ttl);
  } else {
    w.null();
  }
  w.key("expires_at");
  if (info.expires_at) {
    w.value(*info.expires_at);
  } else {
    w.null();
  }
  w.end_object();
  return line(w);
}

std::string format_created(std::string_view path, bool created, std::string_view offset, bool closed,
                           bool json) {
  if (!json) return fmt::format("{}\n", offset);
  json_writer w;
  w.begin_object().key("path").value(path).key("created").value(created);
  w.key("offset").value(offset).key("closed").value(closed).end_object();
  return line(w);
}

std::string format_appended(std::string_view path, std::string_view offset, std::size_t appends, bool closed,
                            bool json) {
  if (!json) return fmt::format("{}\n", offset);
  json_writer w;
  w.begin_object().key("path").value(path).key("offset").value(offset);
  w.key("appends").value(static_cast<std::int64_t>(appends)).key("closed").value(closed).end_object();
  return line(w);
}

std::string format_closed(std::string_view path, std::string_view offset, bool json) {
  if (!json) return fmt::format("{}\n", offset);
  json_writer w;
  w.begin_object().key("path").value(path).key("offset").value(offset).key("closed").value(true).end_object();
  return line(w);
}

std::string format_deleted(std::string_view path, bool json) {
  if (!json) return {};
  json_writer w;
  w.begin_object().key("path").value(path).key("deleted").value(true).end_object();
  return line(w);
}

std::string format_read_batch(const read_batch& b, bool json) {
  if (!json) {
    if (b.kind != content_kind::json) return b.data;
    std::string s;
    for (const auto& m : b.messages) {
      s += m;
      s += '\n';
    }
    return s;
  }
  json_writer w;
  w.begin_object().key("offset").value(b.next_offset);
  w.key("up_to_date").value(b.up_to_date).key("closed").value(b.closed);
  switch (b.kind) {
    case content_kind::text:
      w.key("data").value(b.data);
      break;
    case content_kind::json:
      w.key("messages").begin_array();
      for (const auto& m : b.messages) w.raw(m);  // minified by simdjson: valid JSON
      w.end_array();
      break;
    case content_kind::binary:
      w.key("data_base64").value(base64_encode(b.data));
      break;
  }
  w.end_object();
  return line(w);
}

std::string format_error_text(std::string_view command, std::string_view path, int status,
                              std::string_view message) {
  std::string msg(message);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
  if (status == 0) return fmt::format("weir stream {} {}: {}\n", command, path, msg);
  return fmt::format("weir stream {} {}: HTTP {} {}{}{}\n", command, path, status, http::status_text(status),
                     msg.empty() ? "" : ": ", msg);
}

std::string format_error_json(exit_code code, std::string_view path, int status, std::string_view message) {
  json_writer w;
  w.begin_object().key("error").value(exit_code_name(code)).key("path").value(path);
  w.key("status").value(static_cast<std::int64_t>(status)).key("message").value(message).end_object();
  return line(w);
}

}  // namespace weir::cli
