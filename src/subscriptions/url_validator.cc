#include "subscriptions/url_validator.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace weir::subscriptions {
namespace {

error rejected(std::string reason) {
  return make_error(url_errc::rejected, std::move(reason));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool is_hex_number(std::string_view s) {
  if (s.size() < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  for (char c : s.substr(2)) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// One part of an inet_aton-style literal: decimal, octal (leading 0) or hex (0x). nullopt on overflow.
std::optional<std::uint64_t> parse_ipv4_part(std::string_view s) {
  int base = 10;
  if (is_hex_number(s)) {
    base = 16;
    s.remove_prefix(2);
    if (s.empty()) return 0;
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  std::uint64_t v = 0;
  for (char c : s) {
    int d = std::isdigit(static_cast<unsigned char>(c))
                ? c - '0'
                : (std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    if (d < 0 || d >= base) return std::nullopt;
    v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    if (v > 0xffffffffull) return std::nullopt;
  }
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

// The address an inet_aton()-style parser (which browsers and many resolvers emulate) would see, and
// whether the text was the canonical dotted quad.
struct ipv4_literal {
  std::uint32_t addr = 0;
  bool canonical = false;
};

std::optional<ipv4_literal> parse_ipv4_literal(std::string_view host) {
  auto parts = split(host, '.');
  if (parts.empty() || parts.size() > 4) return std::nullopt;
  std::vector<std::uint64_t> vals;
  bool canonical = parts.size() == 4;
  for (auto p : parts) {
    auto v = parse_ipv4_part(p);
    if (!v) return std::nullopt;
    vals.push_back(*v);
    if (!all_digits(p) || (p.size() > 1 && p[0] == '0') || *v > 255) canonical = false;
  }
  // a.b.c.d, a.b.c (c = 16 bits), a.b (b = 24 bits), a (32 bits)
  std::uint64_t addr = 0;
  for (std::size_t i = 0; i + 1 < vals.size(); ++i) {
    if (vals[i] > 255) return std::nullopt;
    addr |= vals[i] << (8 * (3 - i));
  }
  std::uint64_t last = vals.back();
  if (last >= (1ull << (8 * (5 - vals.size())))) return std::nullopt;
  addr |= last;
  return ipv4_literal{static_cast<std::uint32_t>(addr), canonical};
}

bool in_v4(std::uint32_t a, std::uint32_t net, int bits) {
  std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t(0) << (32 - bits);
  return (a & mask) == (net & mask);
}

constexpr std::uint32_t v4(unsigned a, unsigned b, unsigned c, unsigned d) {
  return (std::uint32_t(a) << 24) | (std::uint32_t(b) << 16) | (std::uint32_t(c) << 8) | d;
}

// Non-public IPv4 ranges (RFC 6890 special-purpose registry, the ones a webhook must never reach).
std::optional<std::string_view> blocked_v4(std::uint32_t a) {
  struct range {
    std::uint32_t net;
    int bits;
    std::string_view why;
  };
  static constexpr std::array<range, 15> ranges{{
      {v4(0, 0, 0, 0), 8, "unspecified/this-network address"},
      {v4(10, 0, 0, 0), 8, "private (RFC 1918) address"},
      {v4(100, 64, 0, 0), 10, "shared (CGNAT) address"},
      {v4(127, 0, 0, 0), 8, "loopback address"},
      {v4(169, 254, 0, 0), 16, "link-local address"},
      {v4(172, 16, 0, 0), 12, "private (RFC 1918) address"},
      {v4(192, 0, 0, 0), 24, "IETF protocol assignment address"},
      {v4(192, 0, 2, 0), 24, "documentation address"},
      {v4(192, 88, 99, 0), 24, "6to4 relay address"},
      {v4(192, 168, 0, 0), 16, "private (RFC 1918) address"},
      {v4(198, 18, 0, 0), 15, "benchmarking address"},
      {v4(198, 51, 100, 0), 24, "documentation address"},
      {v4(203, 0, 113, 0), 24, "documentation address"},
      {v4(224, 0, 0, 0), 4, "multicast address"},
      {v4(240, 0, 0, 0), 4, "reserved/broadcast address"},
  }};
  for (const auto& r : ranges) {
    if (in_v4(a, r.net, r.bits)) return r.why;
  }
  return std::nullopt;
}

// The ranges an allow-listed host may resolve to: RFC 1918, CGNAT and loopback (an operator's own
// network), never link-local (169.254.0.0/16 holds the cloud metadata service), unspecified or multicast.
bool private_v4(std::uint32_t a) {
  return in_v4(a, v4(10, 0, 0, 0), 8) || in_v4(a, v4(172, 16, 0, 0), 12) ||
         in_v4(a, v4(192, 168, 0, 0), 16) || in_v4(a, v4(100, 64, 0, 0), 10) || in_v4(a, v4(127, 0, 0, 0), 8);
}

std::optional<std::string_view> blocked_v6(const std::array<std::uint8_t, 16>& b) {
  auto zero_prefix = [&](int n) {
    for (int i = 0; i < n; ++i) {
      if (b[i] != 0) return false;
    }
    return true;
  };
  if (zero_prefix(15) && b[15] == 0) return "unspecified address";
  if (zero_prefix(15) && b[15] == 1) return "loopback address";
  if (zero_prefix(10) && b[10] == 0xff && b[11] == 0xff) return "IPv4-mapped address";
  if (zero_prefix(12)) return "IPv4-compatible address";
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) return "NAT64 address";
  if (b[0] == 0x01 && b[1] == 0 && b[2] == 0 && b[3] == 0 && b[4] == 0 && b[5] == 0 && b[6] == 0 &&
      b[7] == 0) {
    return "discard-only address";  // 100::/64
  }
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return "documentation address";
  if (b[0] == 0x20 && b[1] == 0x02) return "6to4 address";
  if ((b[0] & 0xfe) == 0xfc) return "unique local address";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local address";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "site-local address";
  if (b[0] == 0xff) return "multicast address";
  return std::nullopt;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

address_rule address_rule_for(const parsed_webhook_url& url) {
  if (url.allow_listed) return address_rule::private_allowed;
  if (url.loopback_exception) return address_rule::loopback_too;
  return address_rule::public_only;
}

status validate_webhook_address(std::string_view ip, address_rule rule) {
  std::string text(ip);
  std::array<std::uint8_t, 16> b6{};
  in_addr a4{};
  if (inet_pton(AF_INET, text.c_str(), &a4) == 1) {
    std::uint32_t a = ntohl(a4.s_addr);
    if (rule == address_rule::loopback_too && in_v4(a, v4(127, 0, 0, 0), 24)) return {};
    auto why = blocked_v4(a);
    if (why && rule == address_rule::private_allowed && private_v4(a)) why.reset();
    // PROTOCOL.md 12.8: "SHOULD block cloud metadata endpoints" - whatever admitted the host.
    if (a == v4(100, 100, 100, 200)) why = "cloud metadata address";
    if (why) return rejected(fmt::format("webhook host resolved to a {} ({})", *why, ip));
    return {};
  }
  if (inet_pton(AF_INET6, text.c_str(), b6.data()) == 1) {
    bool loopback =
        std::all_of(b6.begin(), b6.end() - 1, [](std::uint8_t x) { return x == 0; }) && b6[15] == 1;
    if (rule == address_rule::loopback_too && loopback) return {};
    auto why = blocked_v6(b6);
    bool ula = (b6[0] & 0xfe) == 0xfc;
    if (why && rule == address_rule::private_allowed && (loopback || ula)) why.reset();
    static constexpr std::array<std::uint8_t, 16> aws_metadata{0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0,    0,
                                                               0,    0,    0,    0,    0, 0, 0x02, 0x54};
    if (b6 == aws_metadata) why = "cloud metadata address";
    if (why) return rejected(fmt::format("webhook host resolved to an IPv6 {} ({})", *why, ip));
    return {};
  }
  return rejected(fmt::format("webhook host resolved to an unparsable address '{}'", ip));
}

result<parsed_webhook_url> validate_webhook_url(std::string_view url, url_policy policy) {
  if (url.empty()) return rejected("webhook URL is empty");
  if (url.size() > 2048) return rejected("webhook URL is longer than 2048 bytes");
  for (char c : url) {
    auto u = static_cast<unsigned char>(c);
    // Whitespace, controls, backslashes and non-ASCII are where URL parsers disagree: refuse them all.
    if (u <= 0x20 || u >= 0x7f || c == '\\') return rejected("webhook URL contains a forbidden character");
  }
  auto sep = url.find("://");
  if (sep == std::string_view::npos) return rejected("webhook URL must be absolute");
  parsed_webhook_url out;
  out.scheme = lower(url.substr(0, sep));
  if (out.scheme != "https" && out.scheme != "http") return rejected("webhook URL scheme must be https");
  std::string_view rest = url.substr(sep + 3);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string_view::npos) return rejected("webhook URL must not contain userinfo");
  if (authority.find('%') != std::string_view::npos)
    return rejected("webhook URL host must not be percent-encoded");

  std::string_view host_text;
  std::string_view port_text;
  bool has_port = false;
  bool bracketed = false;
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return rejected("webhook URL has an unterminated IPv6 literal");
    host_text = authority.substr(1, close - 1);
    bracketed = true;
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return rejected("webhook URL has junk after the IPv6 literal");
      port_text = after.substr(1);
      has_port = true;
    }
  } else {
    auto colon = authority.rfind(':');
    host_text = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      has_port = true;
    }
  }
  if (has_port) {
    if (!all_digits(port_text) || port_text.size() > 5) return rejected("webhook URL port is invalid");
    out.port = std::stoi(std::string(port_text));
    if (out.port < 1 || out.port > 65535) return rejected("webhook URL port is out of range");
  }
  if (host_text.empty()) return rejected("webhook URL has no host");

  bool loopback_exception = false;  // host is localhost or 127.0.0.x
  if (!bracketed) {
    std::string host = lower(host_text);
    if (!host.empty() && host.back() == '.') host.pop_back();
    bool listed = !host.empty() && std::find(policy.allow_hosts.begin(), policy.allow_hosts.end(), host) !=
                                       policy.allow_hosts.end();
    if (listed && !parse_ipv4_literal(host)) {
      // PROTOCOL.md 12.8: allow-listed names still need https; their addresses are checked at connect.
      if (out.scheme != "https") return rejected("webhook URL must use https");
      for (char c : host) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
        if (!ok) return rejected("webhook URL host has a forbidden character");
      }
      out.host = std::move(host);
      out.allow_listed = true;
      return out;
    }
  }
  if (bracketed) {
    std::array<std::uint8_t, 16> bytes{};
    std::string h(host_text);
    if (inet_pton(AF_INET6, h.c_str(), bytes.data()) != 1)
      return rejected("webhook URL has an invalid IPv6 literal");
    if (auto why = blocked_v6(bytes)) return rejected(fmt::format("webhook URL targets an IPv6 {}", *why));
    out.host = lower(host_text);
    out.ip_literal = true;
  } else {
    std::string host = lower(host_text);
    if (host.back() == '.') host.pop_back();  // "example.com." is the same name
    if (host.empty()) return rejected("webhook URL has no host");
    for (char c : host) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
      if (!ok) return rejected("webhook URL host has a forbidden character");
    }
    auto labels = split(host, '.');
    for (auto l : labels) {
      if (l.empty() || l.size() > 63) return rejected("webhook URL host has an empty or overlong label");
    }
    // WHATWG URL: a host whose last label is numeric is an IPv4 address, in any inet_aton form.
    std::string_view last = labels.back();
    if (all_digits(last) || is_hex_number(last)) {
      auto lit = parse_ipv4_literal(host);
      if (!lit) return rejected("webhook URL host is an invalid IPv4 literal");
      if (!lit->canonical) return rejected("webhook URL host is a non-canonical IPv4 literal");
      out.ip_literal = true;
      if (in_v4(lit->addr, v4(127, 0, 0, 0), 24)) {
        loopback_exception = true;
      } else if (auto why = blocked_v4(lit->addr)) {
        return rejected(fmt::format("webhook URL targets a {}", *why));
      }
    } else if (host == "localhost") {
      loopback_exception = true;
    } else if (ends_with(host, ".localhost") || ends_with(host, ".local") || ends_with(host, ".internal") ||
               ends_with(host, ".home.arpa") || ends_with(host, ".localdomain")) {
      return rejected("webhook URL targets a local-only host name");
    } else if (labels.size() < 2) {
      return rejected("webhook URL host must be a fully qualified domain name");
    }
    out.host = std::move(host);
  }

  if (loopback_exception) {
    if (!policy.allow_localhost) {
      return rejected("webhook URL targets a loopback address (allowed only with allow-loopback-webhooks)");
    }
    out.loopback_exception = true;
    return out;  // http or https both fine under the development exception
  }
  if (out.scheme != "https") return rejected("webhook URL must use https");
  return out;
}

}  // namespace weir::subscriptions
