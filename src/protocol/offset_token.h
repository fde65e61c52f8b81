// Offset tokens (PROTOCOL.md 8): fixed width, lexicographically sortable, URL-safe, never `-1` or
// `now`: "RRRRRRRRRRRRRRRR_PPPPPPPPPPPPPPPP", 16 decimal digits of reserved epoch (0 today) and 16 of
// the stream position. "0000000000000000_0000000000000000" is the start of every stream.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "streams/types.h"

namespace weir::protocol {

std::string format_offset(streams::stream_offset o);

// The same characters without an allocation, for headers: view() is valid while this object lives.
class offset_chars {
 public:
  explicit offset_chars(streams::stream_offset o);
  std::string_view view() const { return {buf_ + begin_, sizeof buf_ - begin_}; }

 private:
  char buf_[40];  // "0000000000000000_" and up to 20 digits
  std::size_t begin_;
};

// A token (not a sentinel). Malformed: nullopt. A token beyond the 16-digit position space maps to
// a position past every tail.
std::optional<streams::stream_offset> parse_offset_token(std::string_view token);

// The `offset` query parameter.
struct offset_param {
  enum class kind { start, now, at } k = kind::start;
  streams::stream_offset at{};
};
std::optional<offset_param> parse_offset_param(std::string_view value);

}  // namespace weir::protocol
