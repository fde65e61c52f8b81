#include "protocol/cursor.h"

#include <charconv>

namespace weir::protocol {

std::string next_cursor(std::int64_t now_ms, std::optional<std::string_view> client_cursor,
                        std::uint32_t jitter_seconds) {
  std::int64_t current = (now_ms - cursor_epoch_ms) / cursor_interval_ms;
  if (client_cursor) {
    std::int64_t theirs = 0;
    auto [p, ec] =
        std::from_chars(client_cursor->data(), client_cursor->data() + client_cursor->size(), theirs);
    if (ec == std::errc() && p == client_cursor->data() + client_cursor->size() && theirs >= current &&
        theirs < (std::int64_t{1} << 52)) {
      std::int64_t jitter_intervals =
          (static_cast<std::int64_t>(jitter_seconds) * 1000 + cursor_interval_ms - 1) / cursor_interval_ms;
      return std::to_string(theirs + std::max<std::int64_t>(1, jitter_intervals));
    }
  }
  return std::to_string(current);
}

}  // namespace weir::protocol
