#include "subscriptions/glob_matcher.h"

namespace weir::subscriptions {
namespace {

// The classic iterative wildcard match with one backtrack point per star: an element of `pat` for which
// `is_star` holds matches any run (possibly empty) of elements of `s`; any other matches one element for
// which `same` holds. Linear in practice, never exponential. Used on the characters of a segment ('*')
// and on the segments of a path ('**').
template <class Seq, class IsStar, class Same>
bool wildcard_match(const Seq& pat, const Seq& s, IsStar is_star, Same same) {
  std::size_t p = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (p < pat.size() && is_star(pat[p])) {
      star = p++;
      mark = i;
    } else if (p < pat.size() && same(pat[p], s[i])) {
      ++p;
      ++i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && is_star(pat[p])) ++p;
  return p == pat.size();
}

// Matches one segment against a segment pattern in which '*' stands for any run of characters.
bool segment_matches(std::string_view pat, std::string_view seg) {
  return wildcard_match(
      pat, seg, [](char c) { return c == '*'; }, [](char a, char b) { return a == b; });
}

// Segment-level matching with `**` as zero or more segments.
bool match_segments(const std::vector<std::string_view>& pat, const std::vector<std::string_view>& path) {
  return wildcard_match(
      pat, path, [](std::string_view seg) { return seg == "**"; }, segment_matches);
}

}  // namespace

std::vector<std::string_view> split_path(std::string_view s) {
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

std::optional<std::string> normalize_stream_path(std::string_view path) {
  if (!path.empty() && path[0] == '/') path.remove_prefix(1);
  if (path.empty() || path.size() > 1024) return std::nullopt;
  auto segs = split_path(path);
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
  for (auto seg : split_path(pattern)) {
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
  return match_segments(split_path(pattern_), split_path(path));
}

std::string glob_matcher::literal_prefix() const {
  std::string out;
  for (auto seg : split_path(pattern_)) {
    if (seg.find('*') != std::string_view::npos) return out;
    out += seg;
    out += '/';
  }
  out.pop_back();  // a pattern without wildcards matches only itself
  return out;
}

}  // namespace weir::subscriptions
