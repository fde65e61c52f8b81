#include "protocol/response.h"

#include <fmt/format.h>

namespace weir::protocol {

void add_common_headers(response& r) {
  r.add("Access-Control-Allow-Origin", "*");
  r.add(
      "Access-Control-Expose-Headers",
      "Stream-Next-Offset, Stream-Cursor, Stream-Up-To-Date, Stream-Closed, Stream-TTL, Stream-Expires-At, "
      "Stream-SSE-Data-Encoding, Producer-Epoch, Producer-Seq, Producer-Expected-Seq, Producer-Received-Seq, "
      "ETag, Content-Type, Location");
  r.add("X-Content-Type-Options", "nosniff");
  r.add("Cross-Origin-Resource-Policy", "cross-origin");
}

response error_response(http_status s) {
  response r;
  r.status = s.code;
  r.add("Content-Type", "text/plain; charset=utf-8");
  add_common_headers(r);
  r.body = std::string(s.reason);
  r.body += '\n';
  return r;
}

response preflight_response() {
  response r;
  r.status = 204;
  add_common_headers(r);
  r.add("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, HEAD, OPTIONS");
  r.add(
      "Access-Control-Allow-Headers",
      "Content-Type, Authorization, If-None-Match, Stream-Seq, Stream-TTL, Stream-Expires-At, Stream-Closed, "
      "Stream-Forked-From, Stream-Fork-Offset, Stream-Fork-Sub-Offset, Producer-Id, Producer-Epoch, "
      "Producer-Seq");
  r.add("Access-Control-Max-Age", "86400");
  return r;
}

std::string make_etag(std::uint64_t generation, std::string_view start, streams::stream_offset end,
                      bool closed) {
  return fmt::format("\"{:x}:{}:{}{}\"", generation, start, end.value(), closed ? ":c" : "");
}

bool etag_matches(std::string_view inm, std::string_view etag) {
  while (!inm.empty()) {
    auto comma = inm.find(',');
    std::string_view item = inm.substr(0, comma);
    inm = comma == std::string_view::npos ? std::string_view() : inm.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.substr(0, 2) == "W/") item.remove_prefix(2);
    if (item == "*" || item == etag) return true;
  }
  return false;
}

}  // namespace weir::protocol
