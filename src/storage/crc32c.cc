#include "storage/crc32c.h"

#include <climits>

#include <isa-l/crc.h>

namespace weir::storage {

std::uint32_t crc32c_extend(std::uint32_t crc, std::span<const std::byte> data) {
  // crc32_iscsi takes an int length: feed large spans in chunks.
  std::uint32_t reg = ~crc;
  auto* p = reinterpret_cast<unsigned char*>(const_cast<std::byte*>(data.data()));
  std::size_t left = data.size();
  constexpr std::size_t chunk = 1u << 30;
  while (left > 0) {
    std::size_t n = left < chunk ? left : chunk;
    reg = crc32_iscsi(p, static_cast<int>(n), reg);
    p += n;
    left -= n;
  }
  return ~reg;
}

std::uint32_t crc32c(std::span<const std::byte> data) {
  return crc32c_extend(0, data);
}

}  // namespace weir::storage
