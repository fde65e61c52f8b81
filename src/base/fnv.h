// fnv: FNV-1a, 64 bits, the hash that places a stream path on a core and in a raft group. Stable
// across runs and machines (data directories depend on it): never change it.
#pragma once

#include <cstdint>
#include <string_view>

namespace weir {

inline constexpr std::uint64_t fnv1a64_basis = 14695981039346656037ull;

inline std::uint64_t fnv1a64(std::string_view s, std::uint64_t basis = fnv1a64_basis) {
  std::uint64_t h = basis;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace weir
