#include "protocol/response.h"

#include <fmt/format.h>

namespace weir::protocol {

void response::add(static_text name, std::string_view value) {
  // By offset: text_ may move while headers are added, and with the response.
  push({name.view, nullptr, static_cast<std::uint32_t>(text_.size()),
        static_cast<std::uint32_t>(value.size())});
  text_.append(value);
}

void response::add_static(static_text name, static_text value) {
  push({name.view, value.view.data(), 0, static_cast<std::uint32_t>(value.view.size())});
}

void response::push(field f) {
  if (count_ < inline_fields) {
    inline_[count_] = f;
  } else {
    more_.push_back(f);
  }
  ++count_;
}

std::string_view response::value(std::size_t i) const {
  const field& f = at(i);
  if (f.literal != nullptr) return std::string_view(f.literal, f.size);
  return std::string_view(text_).substr(f.off, f.size);
}

std::optional<std::string_view> response::find(std::string_view name) const {
  for (std::size_t i = 0; i < count_; ++i)
    if (at(i).name == name) return value(i);
  return std::nullopt;
}

void add_common_headers(response& r) {
  r.add_static(
      "Access-Control-Expose-Headers",
      "Stream-Next-Offset, Stream-Cursor, Stream-Up-To-Date, Stream-Closed, Stream-TTL, Stream-Expires-At, "
      "Stream-SSE-Data-Encoding, Producer-Epoch, Producer-Seq, Producer-Expected-Seq, Producer-Received-Seq, "
      "ETag, Content-Type, Location, WWW-Authenticate");
  r.add_static("X-Content-Type-Options", "nosniff");
  r.add_static("Cross-Origin-Resource-Policy", "cross-origin");
}

response error_response(http_status s, std::string_view detail) {
  response r;
  r.status = s.code;
  r.add_static("Content-Type", "text/plain; charset=utf-8");
  add_common_headers(r);
  if (!s.allow.empty()) r.add("Allow", s.allow);
  if (!s.retry_after.empty()) r.add("Retry-After", s.retry_after);
  if (!s.www_authenticate.empty()) r.add("WWW-Authenticate", s.www_authenticate);
  r.body = std::string(s.reason);
  if (!detail.empty()) {
    r.body += ": ";
    r.body += detail;
  }
  r.body += '\n';
  return r;
}

response preflight_response() {
  response r;
  r.status = 204;
  add_common_headers(r);
  r.add_static("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, HEAD, OPTIONS");
  r.add_static(
      "Access-Control-Allow-Headers",
      "Content-Type, Authorization, If-None-Match, Stream-Seq, Stream-TTL, Stream-Expires-At, Stream-Closed, "
      "Stream-Forked-From, Stream-Fork-Offset, Stream-Fork-Sub-Offset, Producer-Id, Producer-Epoch, "
      "Producer-Seq");
  r.add_static("Access-Control-Max-Age", "86400");
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
