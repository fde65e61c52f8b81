#include "cli/stream_target.h"

#include <fmt/format.h>

namespace weir::cli {

std::string percent_encode(std::string_view s, bool keep_slash) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    // RFC 3986 2.3: ALPHA / DIGIT / "-" / "." / "_" / "~"
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                            c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

result<stream_target> resolve_target(std::string_view server_url, std::string_view stream) {
  if (stream.empty()) return error{1, "the stream name is empty"};
  if (stream.starts_with("http://") || stream.starts_with("https://")) {
    auto ep = client::parse_endpoint(stream);
    if (!ep) return ep.err();
    // parse_endpoint gives a URL without a path the default prefix; a stream URL must name its stream.
    const auto after_scheme = stream.substr(7);
    if (after_scheme.find('/') == std::string_view::npos) {
      return error{1, fmt::format("{}: the URL names no stream path", stream)};
    }
    stream_target t{*ep, ep->prefix};
    return t;
  }
  auto ep = client::parse_endpoint(server_url);
  if (!ep) return error{1, fmt::format("--server {}", ep.err().reason)};
  if (stream.front() == '/') {
    if (stream.find_first_of("?#") != std::string_view::npos) {
      return error{1, fmt::format("{}: a stream path has no query or fragment", stream)};
    }
    for (const char c : stream) {
      // RFC 9112 3.2: the request target cannot hold spaces or control characters.
      if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
        return error{1, fmt::format("{:?}: a path cannot hold spaces or control characters (give a name)",
                                    std::string(stream))};
      }
    }
    return stream_target{*ep, std::string(stream)};
  }
  return stream_target{*ep, ep->prefix + "/" + percent_encode(stream, true)};
}

}  // namespace weir::cli
