// request_head: the head of one Durable Streams request of `weir stream` (PROTOCOL.md 5.1-5.8), built as
// text for client::http_connection. Pure.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/stream_target.h"

namespace weir::cli {

struct request_spec {
  std::string_view method;  // "PUT", "POST", "GET", "HEAD", "DELETE"
  std::string query;        // without '?', already encoded
  std::vector<std::pair<std::string, std::string>> headers;
  bool with_body = false;  // sends Content-Length (also when the body is empty, e.g. a close)
  std::size_t body_size = 0;
};

// RFC 9110 5.5: a field value holds no CR, LF or other control character but HTAB.
bool header_value_ok(std::string_view v);

std::string format_head(const stream_target& target, const request_spec& spec);

}  // namespace weir::cli
