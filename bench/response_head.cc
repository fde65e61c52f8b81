#include "bench/response_head.h"

#include <charconv>

namespace weir::bench {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool icontains_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    auto comma = list.find(',');
    auto item = list.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (iequals(item, token)) return true;
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

head_status parse_response_head(std::string_view buf, response_head& out, std::size_t& consumed,
                                bool request_was_head) {
  constexpr std::size_t max_head = 64 * 1024;
  const auto end = buf.find("\r\n\r\n");
  if (end == std::string_view::npos)
    return buf.size() > max_head ? head_status::error : head_status::need_more;
  consumed = end + 4;
  out = response_head{};
  std::string_view head = buf.substr(0, end + 2);
  // RFC 9112 4: status-line = HTTP-version SP status-code SP [ reason-phrase ]
  auto eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ') return head_status::error;
  const bool http10 = line[7] == '0';
  int status = 0;
  auto [p, ec] = std::from_chars(line.data() + 9, line.data() + 12, status);
  if (ec != std::errc{} || p != line.data() + 12 || status < 100) return head_status::error;
  out.status = status;
  out.keep_alive = !http10;
  bool has_length = false, chunked = false;
  head.remove_prefix(eol + 2);
  while (!head.empty()) {
    eol = head.find("\r\n");
    line = head.substr(0, eol);
    head.remove_prefix(eol + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return head_status::error;
    const auto name = line.substr(0, colon);
    const auto value = trim(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      std::uint64_t n = 0;
      auto [q, ec2] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec2 != std::errc{} || q != value.data() + value.size()) return head_status::error;
      if (has_length && n != out.content_length) return head_status::error;  // RFC 9112 6.3 item 5
      out.content_length = n;
      has_length = true;
    } else if (iequals(name, "transfer-encoding")) {
      chunked = icontains_token(value, "chunked");
    } else if (iequals(name, "connection")) {
      if (icontains_token(value, "close")) out.keep_alive = false;
      if (icontains_token(value, "keep-alive")) out.keep_alive = true;
    } else if (iequals(name, "stream-next-offset")) {
      out.next_offset = value;
    } else if (iequals(name, "content-type")) {
      out.content_type = value;
    }
  }
  // RFC 9112 6.3: the order of these rules matters.
  if (request_was_head || status < 200 || status == 204 || status == 304) {
    out.framing = response_framing::none;
  } else if (chunked) {
    out.framing = response_framing::chunked;
  } else if (has_length) {
    out.framing = out.content_length ? response_framing::content_length : response_framing::none;
  } else {
    out.framing = response_framing::until_close;
    out.keep_alive = false;
  }
  return head_status::complete;
}

}  // namespace weir::bench
