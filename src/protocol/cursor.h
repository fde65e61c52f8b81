// Stream cursors (PROTOCOL.md 10.1): the number of 20-second intervals since 2024-10-09T00:00:00Z.
// When the client echoes a cursor at or past the current interval, the answer moves strictly past it
// by a random 1-3600 s jitter, so cursors never go backwards and CDN cache keys keep changing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weir::protocol {

inline constexpr std::int64_t cursor_epoch_ms = 1'728'432'000'000;  // 2024-10-09T00:00:00Z
inline constexpr std::int64_t cursor_interval_ms = 20'000;

// `jitter_seconds` in [1, 3600], chosen by the caller (random in production, fixed in tests).
std::string next_cursor(std::int64_t now_ms, std::optional<std::string_view> client_cursor,
                        std::uint32_t jitter_seconds);

}  // namespace weir::protocol
