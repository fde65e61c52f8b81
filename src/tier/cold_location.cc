#include "tier/cold_location.h"

#include <cstdlib>

#include <fmt/format.h>

namespace weir::tier {
namespace {

bool valid_bucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(b.front()) || !alnum(b.back())) return false;
  for (char c : b) {
    if (!alnum(c) && c != '-' && c != '.') return false;
  }
  return b.find("..") == std::string_view::npos;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

result<cold_location> parse_cold_location(std::string_view uri) {
  constexpr std::string_view scheme = "s3://";
  if (uri.substr(0, scheme.size()) != scheme) {
    return weir::error{0, fmt::format("cold location '{}' does not start with s3://", uri)};
  }
  std::string_view rest = uri.substr(scheme.size());
  std::size_t slash = rest.find('/');
  cold_location loc;
  loc.bucket = std::string(rest.substr(0, slash));
  if (!valid_bucket(loc.bucket)) {
    return weir::error{0, fmt::format("cold location: '{}' is not a valid S3 bucket name", loc.bucket)};
  }
  std::string_view prefix = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  for (char c : prefix) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return weir::error{0, "cold location: the prefix has a control character"};
    }
  }
  // Each segment must be a plain name: no empty, "." or ".." segment (S3 would store them, but such a
  // prefix is almost surely a typo and some S3-compatible servers normalise them away).
  std::size_t start = 0;
  while (!prefix.empty() && start <= prefix.size()) {
    std::size_t end = prefix.find('/', start);
    std::string_view seg =
        prefix.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (seg.empty() || seg == "." || seg == "..") {
      return weir::error{
          0, fmt::format("cold location: the prefix '{}' has an empty, '.' or '..' segment", prefix)};
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  loc.prefix = std::string(prefix);
  return loc;
}

result<s3_endpoint> parse_s3_endpoint(std::string_view url) {
  s3_endpoint ep;
  std::size_t sep = url.find("://");
  if (sep == std::string_view::npos)
    return weir::error{0, fmt::format("S3 endpoint '{}' has no scheme", url)};
  ep.scheme = std::string(url.substr(0, sep));
  if (ep.scheme != "http" && ep.scheme != "https") {
    return weir::error{0, fmt::format("S3 endpoint '{}': the scheme must be http or https", url)};
  }
  std::string_view rest = url.substr(sep + 3);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty() || rest.find_first_of("/?#@ ") != std::string_view::npos) {
    return weir::error{
        0, fmt::format("S3 endpoint '{}' must be scheme://host[:port] with nothing after it", url)};
  }
  ep.authority = std::string(rest);
  return ep;
}

s3_credentials credentials_from_environment() {
  return s3_credentials{env_or_empty("AWS_ACCESS_KEY_ID"), env_or_empty("AWS_SECRET_ACCESS_KEY"),
                        env_or_empty("AWS_SESSION_TOKEN")};
}

std::string full_key(const cold_location& loc, std::string_view key) {
  if (loc.prefix.empty()) return std::string(key);
  return loc.prefix + "/" + std::string(key);
}

s3_address address_for(const s3_settings& s, std::string_view key,
                       const std::vector<std::pair<std::string, std::string>>& query) {
  s3_address a;
  std::string object = key.empty() ? std::string() : uri_encode(full_key(s.location, key), false);
  std::string scheme;
  if (s.endpoint) {
    scheme = s.endpoint->scheme;
    a.host = s.endpoint->authority;
    a.path = "/" + s.location.bucket + (key.empty() ? "" : "/" + object);
  } else {
    scheme = "https";
    a.host = fmt::format("{}.s3.{}.amazonaws.com", s.location.bucket, s.region);
    a.path = "/" + object;
  }
  a.url = scheme + "://" + a.host + a.path;
  // The same encoding as the signature's canonical query, so that what is sent is what was signed.
  std::string q = canonical_query(query);
  if (!q.empty()) a.url += "?" + q;
  return a;
}

std::string describe(const s3_settings& s) {
  std::string loc = "s3://" + s.location.bucket + (s.location.prefix.empty() ? "" : "/" + s.location.prefix);
  return fmt::format("{} (region {}, {}, key id {})", loc, s.region,
                     s.endpoint ? "endpoint " + s.endpoint->scheme + "://" + s.endpoint->authority
                                : std::string("AWS virtual-hosted"),
                     s.credentials.access_key_id.empty() ? "(none)" : s.credentials.access_key_id);
}

}  // namespace weir::tier
