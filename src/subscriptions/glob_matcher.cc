#include "subscriptions/glob_matcher.h"

#include <vector>

namespace weir::subscriptions {
namespace {

std::vector<std::string_view> segments(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '/') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// Matches one segment against a segment pattern in which '*' stands for any run of characters.
bool segment_matches(std::string_view pat, std::string_view seg) {
  std::size_t p = 0, s = 0, star = std::string_view::npos, mark = 0;
  while (s < seg.size()) {
    if (p < pat.size() && pat[p] == '*') {
      star = p++;
      mark = s;
    } else if (p < pat.size() && pat[p] == seg[s]) {
      ++p;
      ++s;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      s = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

// Segment-level matching with `**` as zero or more segments. Iterative with one backtrack point per
// `**` (the classic wildcard algorithm lifted to segments): linear in practice, never exponential.
bool match_segments(const std::vector<std::string_view>& pat, const std::vector<std::string_view>& path) {
  std::size_t p = 0, s = 0, star = std::string_view::npos, mark = 0;
  while (s < path.size()) {
    if (p < pat.size() && pat[p] == "**") {
      star = p++;
      mark = s;
    } else if (p < pat.size() && segment_matches(pat[p], path[s])) {
      ++p;
      ++s;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      s = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == "**") ++p;
  return p == pat.size();
}

}  // namespace

std::optional<std::string> normalize_stream_path(std::string_view path) {
  if (!path.empty() && path[0] == '/') path.remove_prefix(1);
  if (path.empty() || path.size() > 1024) return std::nullopt;
  auto segs = segments(path);
  for (auto seg : segs) {
    if (seg.empty() || seg == "." || seg == "..") return std::nullopt;
    for (char c : seg) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::nullopt;
    }
  }
  if (segs.front() == "__ds") return std::nullopt;
  return std::string(path);
}

std::optional<glob_matcher> glob_matcher::compile(std::string_view pattern) {
  if (!pattern.empty() && pattern[0] == '/') pattern.remove_prefix(1);
  if (pattern.empty() || pattern.size() > 1024) return std::nullopt;
  for (auto seg : segments(pattern)) {
    if (seg.empty()) return std::nullopt;
    if (seg.find("**") != std::string_view::npos && seg != "**") return std::nullopt;
    for (char c : seg) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::nullopt;
    }
  }
  glob_matcher g;
  g.pattern_ = std::string(pattern);
  return g;
}

bool glob_matcher::matches(std::string_view path) const {
  if (!path.empty() && path[0] == '/') path.remove_prefix(1);
  return match_segments(segments(pattern_), segments(path));
}

std::string glob_matcher::literal_prefix() const {
  std::string out;
  for (auto seg : segments(pattern_)) {
    if (seg.find('*') != std::string_view::npos) return out;
    out += seg;
    out += '/';
  }
  out.pop_back();  // a pattern without wildcards matches only itself
  return out;
}

}  // namespace weir::subscriptions
