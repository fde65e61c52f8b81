#include "protocol/offset_token.h"

#include <limits>

namespace weir::protocol {

offset_chars::offset_chars(streams::stream_offset o) {
  std::size_t end = sizeof buf_;
  std::size_t at = end;
  std::uint64_t v = o.value();
  do {
    buf_[--at] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (end - at < 16) buf_[--at] = '0';
  constexpr std::string_view epoch = "0000000000000000_";
  at -= epoch.size();
  epoch.copy(buf_ + at, epoch.size());
  begin_ = at;
}

std::string format_offset(streams::stream_offset o) {
  return std::string(offset_chars(o).view());
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
