// string_map (and string_set): an unordered_map (set) keyed by std::string that can be searched with a
// std::string_view or a const char* without building a std::string (C++20 heterogeneous lookup).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace weir {

// Not noexcept on purpose: libstdc++ stores each node's hash code in the node only for a hasher that
// may throw or is not "fast" (std::__is_fast_hash, true for any hasher of its own). Without the stored
// code a look-up hashes the key of every node it steps past to find where its bucket ends, and a rehash
// hashes every key again: with paths as keys, that was most of a look-up's time.
struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <class V>
using string_map = std::unordered_map<std::string, V, string_hash, std::equal_to<>>;
using string_set = std::unordered_set<std::string, string_hash, std::equal_to<>>;

}  // namespace weir
