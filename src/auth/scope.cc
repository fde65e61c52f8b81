#include "auth/scope.h"

#include "protocol/header_values.h"

namespace weir::auth {

std::optional<op> op_from_name(std::string_view name) {
  if (name == "read") return op::read;
  if (name == "write") return op::write;
  if (name == "delete") return op::remove;
  if (name == "admin") return op::admin;
  return std::nullopt;
}

std::string_view op_name(op o) {
  switch (o) {
    case op::read:
      return "read";
    case op::write:
      return "write";
    case op::remove:
      return "delete";
    case op::admin:
      return "admin";
  }
  return "?";
}

namespace {
bool covers(const scope_rule& r, std::string_view path) {
  if (path.substr(0, r.prefix.size()) != r.prefix) return false;
  if (r.any_suffix || path.size() == r.prefix.size()) return true;
  // A segment boundary: the prefix ends with '/' or the path continues with one.
  return r.prefix.back() == '/' || path[r.prefix.size()] == '/';
}

bool has_dot_segment(std::string_view p) {
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find('/', start);
    if (end == std::string_view::npos) end = p.size();
    std::string_view seg = p.substr(start, end - start);
    if (seg == "." || seg == "..") return true;
    start = end + 1;
  }
  return false;
}
}  // namespace

bool scope::allows(std::string_view canonical_path, op o) const {
  for (const scope_rule& r : rules) {
    if ((r.ops & static_cast<op_set>(o)) != 0 && covers(r, canonical_path)) return true;
  }
  return false;
}

std::string parse_prefix(std::string_view text, scope_rule& rule) {
  rule.any_suffix = !text.empty() && text.back() == '*';
  if (rule.any_suffix) text.remove_suffix(1);
  if (text.empty() || text.front() != '/') return "a prefix must start with '/'";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '\\') return "a prefix must not hold control characters or '\\'";
    if (c == '%') return "a prefix is written decoded: no '%' escapes";
    if (c == '*' || c == '?' || c == '#') return "'*' may only end a prefix; no '?' or '#'";
  }
  if (has_dot_segment(text.substr(1))) return "a prefix must not have '.' or '..' segments";
  rule.prefix = std::string(text);
  return "";
}

std::optional<std::string> canonical_path(std::string_view raw_path) {
  if (protocol::check_stream_path(raw_path, raw_path.size()) != protocol::path_check::ok) return std::nullopt;
  return protocol::percent_decode(raw_path, false);
}

scope parse_scope_claim(std::string_view claim) {
  scope s;
  while (!claim.empty()) {
    std::size_t sp = claim.find(' ');
    std::string_view item = claim.substr(0, sp);
    claim = sp == std::string_view::npos ? std::string_view() : claim.substr(sp + 1);
    std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) continue;
    scope_rule rule;
    std::string_view ops = item.substr(0, colon);
    bool known = !ops.empty();
    while (known && !ops.empty()) {
      std::size_t comma = ops.find(',');
      auto o = op_from_name(ops.substr(0, comma));
      if (!o) known = false;
      if (o) rule.ops |= static_cast<op_set>(*o);
      ops = comma == std::string_view::npos ? std::string_view() : ops.substr(comma + 1);
    }
    if (!known || !parse_prefix(item.substr(colon + 1), rule).empty()) continue;
    s.rules.push_back(std::move(rule));
  }
  return s;
}

}  // namespace weir::auth
