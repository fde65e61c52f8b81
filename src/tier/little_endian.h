// Little-endian integers in the tier's byte formats (object_format.h, restore_snapshot.h). Pure.
#pragma once

#include <cstddef>
#include <vector>

namespace weir::tier {

template <class T>
void put_le(std::vector<std::byte>& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
}

template <class T>
T get_le(const std::byte* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  return v;
}

}  // namespace weir::tier
