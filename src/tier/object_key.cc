#include "tier/object_key.h"

#include <fmt/format.h>

namespace weir::tier {
namespace {

// Exactly `width` lower-case hex digits.
template <class T>
bool parse_hex(std::string_view s, std::size_t width, T& out) {
  if (s.size() != width) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return false;
    }
    v = v * 16 + static_cast<std::uint64_t>(d);
  }
  out = static_cast<T>(v);
  return true;
}

// Consumes `lit` from the front of s.
bool eat(std::string_view& s, std::string_view lit) {
  if (s.substr(0, lit.size()) != lit) return false;
  s.remove_prefix(lit.size());
  return true;
}

}  // namespace

std::string epoch_key_prefix(cold_epoch epoch) {
  return fmt::format("e{:04x}/", epoch.value());
}

std::string group_key_prefix(cold_epoch epoch, cold_group group) {
  return fmt::format("e{:04x}/g{:08x}/", epoch.value(), group.value());
}

std::string object_key(const object_name& n) {
  return fmt::format("{}t{:016x}-s{:016x}.obj", group_key_prefix(n.epoch, n.group), n.term.value(),
                     n.seq.value());
}

std::optional<object_name> parse_object_key(std::string_view key) {
  std::uint16_t epoch = 0;
  std::uint32_t group = 0;
  std::uint64_t term = 0;
  std::uint64_t seq = 0;
  std::string_view s = key;
  if (!eat(s, "e") || !parse_hex(s.substr(0, 4), 4, epoch)) return std::nullopt;
  s.remove_prefix(4);
  if (!eat(s, "/g") || !parse_hex(s.substr(0, 8), 8, group)) return std::nullopt;
  s.remove_prefix(8);
  if (!eat(s, "/t") || !parse_hex(s.substr(0, 16), 16, term)) return std::nullopt;
  s.remove_prefix(16);
  if (!eat(s, "-s") || !parse_hex(s.substr(0, 16), 16, seq)) return std::nullopt;
  s.remove_prefix(16);
  if (s != ".obj") return std::nullopt;
  return object_name{cold_epoch{epoch}, cold_group{group}, leader_term{term}, upload_seq{seq}};
}

}  // namespace weir::tier
