// string_map (and string_set): an unordered_map (set) keyed by std::string that can be searched with a
// std::string_view or a const char* without building a std::string (C++20 heterogeneous lookup).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace weir {

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

template <class V>
using string_map = std::unordered_map<std::string, V, string_hash, std::equal_to<>>;
using string_set = std::unordered_set<std::string, string_hash, std::equal_to<>>;

}  // namespace weir
