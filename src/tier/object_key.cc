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

namespace {

// "t<term>-s<seq>" at the front of `s`, consumed.
bool parse_term_seq_prefix(std::string_view& s, object_name& n) {
  std::uint64_t term = 0;
  std::uint64_t seq = 0;
  if (!eat(s, "t") || !parse_hex(s.substr(0, 16), 16, term)) return false;
  s.remove_prefix(16);
  if (!eat(s, "-s") || !parse_hex(s.substr(0, 16), 16, seq)) return false;
  s.remove_prefix(16);
  n.term = leader_term{term};
  n.seq = upload_seq{seq};
  return true;
}

// "t<term>-s<seq><suffix>" at the front of `s`, the whole rest of it.
bool parse_term_seq(std::string_view s, std::string_view suffix, object_name& n) {
  return parse_term_seq_prefix(s, n) && s == suffix;
}

// "e<epoch>/" at the front of `s`, consumed.
bool parse_epoch(std::string_view& s, object_name& n) {
  std::uint16_t epoch = 0;
  if (!eat(s, "e") || !parse_hex(s.substr(0, 4), 4, epoch)) return false;
  s.remove_prefix(4);
  n.epoch = cold_epoch{epoch};
  return eat(s, "/");
}

// "g<group>/" at the front of `s`, consumed.
bool parse_group(std::string_view& s, object_name& n) {
  std::uint32_t group = 0;
  if (!eat(s, "g") || !parse_hex(s.substr(0, 8), 8, group)) return false;
  s.remove_prefix(8);
  n.group = cold_group{group};
  return eat(s, "/");
}

}  // namespace

std::optional<object_name> parse_object_key(std::string_view key) {
  object_name n;
  if (!parse_epoch(key, n) || !parse_group(key, n) || !parse_term_seq(key, ".obj", n)) return std::nullopt;
  return n;
}

std::string snapshot_key_prefix(cold_epoch epoch) {
  return fmt::format("e{:04x}/snap/", epoch.value());
}

std::string snapshot_key_prefix(cold_epoch epoch, cold_group group) {
  return fmt::format("{}g{:08x}/", snapshot_key_prefix(epoch), group.value());
}

std::string snapshot_key(const object_name& n) {
  return fmt::format("{}t{:016x}-s{:016x}.snap", snapshot_key_prefix(n.epoch, n.group), n.term.value(),
                     n.seq.value());
}

std::optional<object_name> parse_snapshot_key(std::string_view key) {
  object_name n;
  if (!parse_epoch(key, n) || !eat(key, "snap/") || !parse_group(key, n) ||
      !parse_term_seq(key, ".snap", n)) {
    return std::nullopt;
  }
  return n;
}

std::string snapshot_part_key(const object_name& n, std::uint32_t part) {
  return fmt::format("{}t{:016x}-s{:016x}.part{:08x}", snapshot_key_prefix(n.epoch, n.group), n.term.value(),
                     n.seq.value(), part);
}

std::optional<snapshot_part_name> parse_snapshot_part_key(std::string_view key) {
  snapshot_part_name p;
  if (!parse_epoch(key, p.snapshot) || !eat(key, "snap/") || !parse_group(key, p.snapshot) ||
      !parse_term_seq_prefix(key, p.snapshot) || !eat(key, ".part") || !parse_hex(key, 8, p.part)) {
    return std::nullopt;
  }
  return p;
}

}  // namespace weir::tier
