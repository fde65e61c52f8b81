#include "cli/request_head.h"

#include <fmt/format.h>

namespace weir::cli {

bool header_value_ok(std::string_view v) {
  for (const char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

std::string format_head(const stream_target& target, const request_spec& spec) {
  std::string head =
      fmt::format("{} {}{}{} HTTP/1.1\r\nHost: {}:{}\r\n", spec.method, target.path,
                  spec.query.empty() ? "" : "?", spec.query, target.server.host, target.server.port);
  if (!target.token.empty()) head += fmt::format("Authorization: Bearer {}\r\n", target.token);
  for (const auto& [name, value] : spec.headers) head += fmt::format("{}: {}\r\n", name, value);
  if (spec.with_body) head += fmt::format("Content-Length: {}\r\n", spec.body_size);
  head += "\r\n";
  return head;
}

}  // namespace weir::cli
