// CRC32C (Castagnoli), the checksum of every log record and checkpoint. Backed by ISA-L's crc32_iscsi,
// which takes and returns the *un-inverted* register: the standard CRC32C is ~crc32_iscsi(p, n, ~0u).
// Test vector (RFC 3720 B.4 convention): crc32c("123456789") == 0xE3069283.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace weir::storage {

// The CRC32C of `data`.
std::uint32_t crc32c(std::span<const std::byte> data);
// Continues a CRC32C: crc32c_extend(crc32c(a), b) == crc32c(a ++ b).
std::uint32_t crc32c_extend(std::uint32_t crc, std::span<const std::byte> data);

}  // namespace weir::storage
