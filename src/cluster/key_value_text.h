// key_value_text: the small "KEY = VALUE" text files of a cluster node's data directory (the identity
// file `cluster`, the members file `raft/members`): one setting a line, blank lines and `#` comments
// skipped, spaces around keys and values ignored.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace weir::cluster {

inline std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Calls `fn(key, value, line)` for every setting of `text`, in order, until it returns an error text.
// Returns that text, or what is wrong with a line that is not KEY = VALUE; nullopt when all went well.
template <class Fn>
std::optional<std::string> for_each_key_value(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = trim_blanks(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty() || line.front() == '#') continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) return "'" + std::string(line) + "' is not KEY = VALUE";
    std::optional<std::string> failed =
        fn(trim_blanks(line.substr(0, eq)), trim_blanks(line.substr(eq + 1)), line);
    if (failed) return failed;
  }
  return std::nullopt;
}

}  // namespace weir::cluster
