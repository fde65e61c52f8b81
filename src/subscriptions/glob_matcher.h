// Stream-root-relative paths and the subscription glob (PROTOCOL.md 6, 6.2): `*` matches exactly one
// path segment, `**` zero or more segments; within a segment, `*` also matches any run of characters
// (e.g. `events-*`). Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::subscriptions {

// The '/'-separated segments of `s`, empty ones included ("a//b/" -> "a", "", "b", "").
std::vector<std::string_view> split_path(std::string_view s);

// Normalises a stream-root-relative path: strips one leading '/', rejects empty paths, empty, "." and
// ".." segments and a first segment of `__ds` (reserved, PROTOCOL.md 6). nullopt when invalid.
std::optional<std::string> normalize_stream_path(std::string_view path);

class glob_matcher {
 public:
  // nullopt when the pattern is empty or has empty segments; `**` must be a whole segment.
  static std::optional<glob_matcher> compile(std::string_view pattern);

  bool matches(std::string_view path) const;
  const std::string& pattern() const { return pattern_; }
  // The longest leading run of whole literal segments, with a trailing '/' ("events/" for "events/*"; the
  // pattern itself when it has no wildcard): every match starts with it, so backfill lists by it.
  std::string literal_prefix() const;

 private:
  std::string pattern_;
};

}  // namespace weir::subscriptions
