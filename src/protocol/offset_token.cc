#include "protocol/offset_token.h"

#include <fmt/format.h>

#include <limits>

namespace weir::protocol {

std::string format_offset(streams::stream_offset o) {
  return fmt::format("0000000000000000_{:016d}", o.value());
}

std::optional<streams::stream_offset> parse_offset_token(std::string_view t) {
  if (t.size() != 33 || t[16] != '_') return std::nullopt;
  std::uint64_t hi = 0, lo = 0;
  for (std::size_t i = 0; i < 33; ++i) {
    if (i == 16) continue;
    char c = t[i];
    if (c < '0' || c > '9') return std::nullopt;
    std::uint64_t& part = i < 16 ? hi : lo;
    part = part * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (hi != 0) return streams::stream_offset(std::numeric_limits<std::uint64_t>::max());
  return streams::stream_offset(lo);
}

std::optional<offset_param> parse_offset_param(std::string_view v) {
  if (v == "-1") return offset_param{offset_param::kind::start, {}};
  if (v == "now") return offset_param{offset_param::kind::now, {}};
  auto o = parse_offset_token(v);
  if (!o) return std::nullopt;
  return offset_param{offset_param::kind::at, *o};
}

}  // namespace weir::protocol
