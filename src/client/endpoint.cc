#include "client/endpoint.h"

#include <arpa/inet.h>

#include <charconv>

#include <fmt/format.h>

namespace weir::client {
namespace {

error bad(std::string reason) {
  return error{1, std::move(reason)};
}

bool parse_port(std::string_view s, unsigned& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

}  // namespace

result<endpoint> parse_endpoint(std::string_view url) {
  endpoint e;
  e.url = std::string(url);
  constexpr std::string_view scheme = "http://";
  if (url.substr(0, scheme.size()) != scheme)
    return bad(fmt::format("{}: only http:// URLs are supported", url));
  std::string_view rest = url.substr(scheme.size());
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.find_first_of("?#") != std::string_view::npos)
    return bad(fmt::format("{}: no query or fragment", url));
  const auto colon = authority.rfind(':');
  std::string_view host = authority.substr(0, colon);
  if (colon != std::string_view::npos) {
    unsigned port = 0;
    if (!parse_port(authority.substr(colon + 1), port) || port == 0 || port > 65535) {
      return bad(fmt::format("{}: bad port", url));
    }
    e.port = static_cast<std::uint16_t>(port);
  }
  if (host == "localhost") host = "127.0.0.1";
  in_addr addr{};
  if (host.empty() || inet_pton(AF_INET, std::string(host).c_str(), &addr) != 1) {
    return bad(fmt::format("{}: host must be an IPv4 address or localhost", url));
  }
  e.host = std::string(host);
  e.prefix = path.empty() ? std::string("/v1/stream") : std::string(path);
  return e;
}

}  // namespace weir::client
