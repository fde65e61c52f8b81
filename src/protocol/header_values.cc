#include "protocol/header_values.h"

#include <cctype>

namespace weir::protocol {

namespace {
bool all_digits(std::string_view v) {
  if (v.empty()) return false;
  for (char c : v)
    if (c < '0' || c > '9') return false;
  return true;
}

std::optional<std::uint64_t> parse_u64(std::string_view v, std::uint64_t max) {
  if (!all_digits(v) || v.size() > 19) return std::nullopt;
  std::uint64_t n = 0;
  for (char c : v) n = n * 10 + static_cast<std::uint64_t>(c - '0');
  if (n > max) return std::nullopt;
  return n;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::optional<std::uint64_t> parse_ttl(std::string_view v) {
  if (v.size() > 1 && v[0] == '0') return std::nullopt;
  return parse_u64(v, 0xFFFFFFFFFFFFull);  // ~8.9 million years: anything larger is nonsense
}

std::optional<std::uint64_t> parse_producer_number(std::string_view v) {
  return parse_u64(v, (1ull << 53) - 1);
}

std::optional<std::uint64_t> parse_sub_offset(std::string_view v) {
  if (v.size() > 1 && v[0] == '0') return std::nullopt;
  return parse_u64(v, 0xFFFFFFFFull);
}

bool is_true(std::string_view v) {
  return v.size() == 4 && std::tolower(static_cast<unsigned char>(v[0])) == 't' &&
         std::tolower(static_cast<unsigned char>(v[1])) == 'r' &&
         std::tolower(static_cast<unsigned char>(v[2])) == 'u' &&
         std::tolower(static_cast<unsigned char>(v[3])) == 'e';
}

// RFC 3339 5.6: full-date "T" partial-time time-offset, e.g. 2026-01-02T03:04:05.678Z or +01:00.
std::optional<std::int64_t> parse_rfc3339_ms(std::string_view v) {
  auto num = [&](std::size_t pos, std::size_t len) -> std::optional<int> {
    if (pos + len > v.size()) return std::nullopt;
    int n = 0;
    for (std::size_t i = pos; i < pos + len; ++i) {
      if (v[i] < '0' || v[i] > '9') return std::nullopt;
      n = n * 10 + (v[i] - '0');
    }
    return n;
  };
  auto year = num(0, 4), month = num(5, 2), day = num(8, 2), hour = num(11, 2), minute = num(14, 2),
       second = num(17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  if (v[4] != '-' || v[7] != '-' || (v[10] != 'T' && v[10] != 't' && v[10] != ' ') || v[13] != ':' ||
      v[16] != ':')
    return std::nullopt;
  if (*month < 1 || *month > 12 || *day < 1 || *hour > 23 || *minute > 59 || *second > 60)
    return std::nullopt;
  static constexpr int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (*year % 4 == 0 && *year % 100 != 0) || *year % 400 == 0;
  if (*day > mdays[*month - 1] || (*month == 2 && *day == 29 && !leap)) return std::nullopt;
  std::size_t pos = 19;
  int millis = 0;
  if (pos < v.size() && v[pos] == '.') {
    ++pos;
    std::size_t digits = 0;
    while (pos < v.size() && v[pos] >= '0' && v[pos] <= '9') {
      if (digits < 3) millis = millis * 10 + (v[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (std::size_t d = digits; d < 3; ++d) millis *= 10;
  }
  if (pos >= v.size()) return std::nullopt;
  int offset_min = 0;
  if (v[pos] == 'Z' || v[pos] == 'z') {
    ++pos;
  } else if (v[pos] == '+' || v[pos] == '-') {
    auto oh = num(pos + 1, 2), om = num(pos + 4, 2);
    if (!oh || !om || pos + 3 >= v.size() || v[pos + 3] != ':' || *oh > 23 || *om > 59) return std::nullopt;
    offset_min = (*oh * 60 + *om) * (v[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != v.size()) return std::nullopt;
  std::int64_t days = days_from_civil(*year, static_cast<unsigned>(*month), static_cast<unsigned>(*day));
  std::int64_t secs = days * 86400 + *hour * 3600 + *minute * 60 + std::min(*second, 59) - offset_min * 60;
  return secs * 1000 + millis;
}

std::optional<std::string> percent_decode(std::string_view v, bool plus_is_space) {
  std::string out;
  out.reserve(v.size());
  const std::string_view special = plus_is_space ? std::string_view("%+") : std::string_view("%");
  std::size_t i = 0;
  while (i < v.size()) {
    // Plain characters (nearly all of a path) are copied a run at a time.
    std::size_t run_end = v.find_first_of(special, i);
    if (run_end == std::string_view::npos) run_end = v.size();
    out.append(v.data() + i, run_end - i);
    i = run_end;
    if (i == v.size()) break;
    if (v[i] == '+') {
      out.push_back(' ');
      ++i;
      continue;
    }
    if (i + 2 >= v.size()) return std::nullopt;
    int h = hex_value(v[i + 1]), l = hex_value(v[i + 2]);
    if (h < 0 || l < 0) return std::nullopt;
    out.push_back(static_cast<char>(h * 16 + l));
    i += 3;
  }
  return out;
}

std::optional<std::vector<query_param>> parse_query(std::string_view q) {
  std::vector<query_param> out;
  while (!q.empty()) {
    auto amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    auto name = percent_decode(pair.substr(0, eq), true);
    auto value =
        percent_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
    if (!name || !value) return std::nullopt;
    out.push_back({std::move(*name), std::move(*value)});
  }
  return out;
}

path_check check_stream_path(std::string_view path, std::size_t max_length) {
  if (path.size() > max_length) return path_check::too_long;
  if (path.empty() || path[0] != '/') return path_check::bad;
  auto decoded = percent_decode(path, false);
  if (!decoded) return path_check::bad;
  for (std::string_view p : {path, std::string_view(*decoded)}) {
    for (char c : p) {
      auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f || c == '\\') return path_check::bad;
    }
    std::size_t start = 1;
    while (start <= p.size()) {
      std::size_t end = p.find('/', start);
      if (end == std::string_view::npos) end = p.size();
      std::string_view seg = p.substr(start, end - start);
      if (seg == "." || seg == "..") return path_check::bad;
      start = end + 1;
    }
  }
  return path_check::ok;
}

namespace {
// RFC 9110 5.6.2: tchar.
bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}
// A token at the start of `v`: its length (0 when there is none).
std::size_t token_length(std::string_view v) {
  std::size_t n = 0;
  while (n < v.size() && is_tchar(v[n])) ++n;
  return n;
}
// A quoted-string (RFC 9110 5.6.4) at the start of `v`: its length including the quotes, 0 if malformed.
std::size_t quoted_length(std::string_view v) {
  if (v.empty() || v[0] != '"') return 0;
  for (std::size_t i = 1; i < v.size(); ++i) {
    auto u = static_cast<unsigned char>(v[i]);
    if (v[i] == '"') return i + 1;
    if (v[i] == '\\') {
      if (++i == v.size()) return 0;
      u = static_cast<unsigned char>(v[i]);
      if (u < 0x20 && u != '\t') return 0;
      if (u == 0x7f) return 0;
      continue;
    }
    if ((u < 0x20 && u != '\t') || u == 0x7f) return 0;
  }
  return 0;
}
void skip_ows(std::string_view& v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
}
}  // namespace

bool valid_media_type(std::string_view v) {
  std::size_t n = token_length(v);
  if (n == 0 || n == v.size() || v[n] != '/') return false;
  v.remove_prefix(n + 1);
  n = token_length(v);
  if (n == 0) return false;
  v.remove_prefix(n);
  while (true) {
    skip_ows(v);
    if (v.empty()) return true;
    if (v.front() != ';') return false;
    v.remove_prefix(1);
    skip_ows(v);
    if (v.empty() || v.front() == ';') continue;  // an empty parameter is allowed
    n = token_length(v);
    if (n == 0 || n == v.size() || v[n] != '=') return false;
    v.remove_prefix(n + 1);
    n = v.empty() || v.front() != '"' ? token_length(v) : quoted_length(v);
    if (n == 0) return false;
    v.remove_prefix(n);
  }
}

bool valid_url_host(std::string_view v) {
  std::size_t host_end = 0;
  if (!v.empty() && v.front() == '[') {
    host_end = v.find(']');
    if (host_end == std::string_view::npos || host_end == 1) return false;
    for (char c : v.substr(1, host_end - 1)) {
      bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      if (!hex && c != ':' && c != '.') return false;
    }
    ++host_end;
  } else {
    while (host_end < v.size() && v[host_end] != ':') {
      char c = v[host_end];
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                c == '.' || c == '_';
      if (!ok) return false;
      ++host_end;
    }
    if (host_end == 0) return false;
  }
  if (host_end == v.size()) return true;
  std::string_view port = v.substr(host_end);
  if (port.front() != ':' || port.size() < 2 || port.size() > 6) return false;
  return all_digits(port.substr(1));
}

bool valid_origin(std::string_view v) {
  for (std::string_view scheme : {std::string_view("http://"), std::string_view("https://")}) {
    if (v.substr(0, scheme.size()) == scheme) return valid_url_host(v.substr(scheme.size()));
  }
  return false;
}

bool has_reserved_segment(std::string_view decoded_path) {
  std::string_view root, rest;
  return split_reserved_path(decoded_path, root, rest);
}

bool is_server_path(std::string_view decoded_path) {
  for (std::string_view own :
       {std::string_view("/healthz"), std::string_view("/metrics"), std::string_view("/cluster")}) {
    if (decoded_path.substr(0, own.size()) != own) continue;
    if (decoded_path.size() == own.size() || decoded_path[own.size()] == '/') return true;
  }
  return false;
}

bool split_reserved_path(std::string_view path, std::string_view& root, std::string_view& rest) {
  std::size_t start = 0;
  while (start < path.size()) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) return false;
    std::size_t end = path.find('/', slash + 1);
    std::string_view seg =
        path.substr(slash + 1, end == std::string_view::npos ? std::string_view::npos : end - slash - 1);
    if (seg == "__ds") {
      root = path.substr(0, slash + 1);
      rest = end == std::string_view::npos ? std::string_view() : path.substr(end + 1);
      return true;
    }
    start = slash + 1;
  }
  return false;
}

}  // namespace weir::protocol
