#include "subscriptions/subscription_replica.h"

#include <limits>

#include <fmt/format.h>

#include "base/assert.h"
#include "subscriptions/byte_codec.h"
#include "subscriptions/subscription_log.h"

namespace weir::subscriptions {
namespace {

using byte_codec::put_bytes;
using byte_codec::put_le;
using byte_codec::put_string;
using byte_codec::reader;

enum class op : std::uint8_t { records = 1, key = 2 };

constexpr std::string_view part_magic = "weirsubp";
constexpr std::uint64_t part_version = 1;
constexpr std::uint64_t part_with_keys = 1;  // flags bit 0

error malformed(std::string_view what) {
  return make_error(store_errc::corrupt, fmt::format("subscription entry: {}", what));
}

error bad_part(std::string_view what) {
  return make_error(store_errc::corrupt, fmt::format("subscription snapshot: {}", what));
}

void put_key(std::vector<std::byte>& out, std::uint64_t node, const node_public_key& key) {
  WEIR_ASSERT(key.kid.size() <= std::numeric_limits<std::uint16_t>::max() &&
                  key.x.size() <= std::numeric_limits<std::uint16_t>::max(),
              "node key of {} + {} bytes", key.kid.size(), key.x.size());
  put_le(out, node, 8);
  put_string(out, key.kid, 2);
  put_string(out, key.x, 2);
}

}  // namespace

std::vector<std::byte> encode_records_entry(std::string_view records) {
  std::vector<std::byte> out;
  out.reserve(1 + records.size());
  put_le(out, static_cast<std::uint8_t>(op::records), 1);
  put_bytes(out, records);
  return out;
}

std::vector<std::byte> encode_key_entry(std::uint64_t node, const node_public_key& key) {
  std::vector<std::byte> out;
  put_le(out, static_cast<std::uint8_t>(op::key), 1);
  put_key(out, node, key);
  return out;
}

result<replica_entry> decode_replica_entry(std::span<const std::byte> payload) {
  reader r(payload);
  std::uint64_t kind = 0;
  if (!r.le(kind, 1)) return malformed("empty");
  switch (static_cast<op>(kind)) {
    case op::records:
      return replica_entry(records_entry{r.rest()});
    case op::key: {
      key_entry k;
      if (!r.le(k.node, 8) || !r.string(k.key.kid, 2) || !r.string(k.key.x, 2))
        return malformed("short node key");
      if (!r.at_end()) return malformed("trailing bytes after a node key");
      return replica_entry(std::move(k));
    }
  }
  return malformed(fmt::format("unknown op {}", kind));
}

status subscription_replica::apply(std::span<const std::byte> payload) {
  auto e = decode_replica_entry(payload);
  if (!e) return e.err();
  if (auto* k = std::get_if<key_entry>(&*e)) {
    keys_[k->node] = std::move(k->key);
    return {};
  }
  return apply_records(subs_, std::get<records_entry>(*e).records);
}

std::vector<std::byte> subscription_replica::snapshot_part(
    const std::function<bool(std::string_view key)>& in_part, bool with_keys) const {
  std::vector<std::byte> out;
  put_bytes(out, part_magic);
  put_le(out, part_version, 1);
  put_le(out, with_keys ? part_with_keys : 0, 1);
  if (with_keys) {
    WEIR_ASSERT(keys_.size() <= std::numeric_limits<std::uint32_t>::max(), "{} node keys", keys_.size());
    put_le(out, keys_.size(), 4);
    for (const auto& [node, key] : keys_) put_key(out, node, key);  // a std::map: ascending node ids
  }
  std::vector<persisted_subscription> subs;
  for (const auto& [key, s] : subs_) {
    if (in_part(key)) subs.push_back(s);
  }
  const std::string image = encode_image(subs);
  put_le(out, image.size(), 8);  // so that a blob cut between two records is not a smaller valid one
  put_bytes(out, image);
  return out;
}

status subscription_replica::restore_part(std::span<const std::byte> blob,
                                          const std::function<bool(std::string_view key)>& in_part) {
  if (blob.size() < part_magic.size()) return bad_part("truncated");
  if (std::string_view(reinterpret_cast<const char*>(blob.data()), part_magic.size()) != part_magic) {
    return bad_part("not a subscription snapshot (magic)");
  }
  reader r(blob.subspan(part_magic.size()));
  std::uint64_t version = 0;
  std::uint64_t flags = 0;
  if (!r.le(version, 1) || !r.le(flags, 1)) return bad_part("truncated");
  if (version != part_version) return bad_part(fmt::format("unknown version {}", version));
  if ((flags & ~part_with_keys) != 0) return bad_part(fmt::format("unknown flags {}", flags));
  const bool with_keys = (flags & part_with_keys) != 0;
  std::map<std::uint64_t, node_public_key> keys;
  if (with_keys) {
    std::uint64_t count = 0;
    if (!r.le(count, 4)) return bad_part("truncated");
    for (std::uint64_t i = 0; i < count; ++i) {
      std::uint64_t node = 0;
      node_public_key key;
      if (!r.le(node, 8) || !r.string(key.kid, 2) || !r.string(key.x, 2)) return bad_part("short node key");
      if (!keys.empty() && node <= keys.rbegin()->first) return bad_part("node keys out of order");
      keys.emplace(node, std::move(key));
    }
  }
  std::uint64_t image_size = 0;
  if (!r.le(image_size, 8)) return bad_part("truncated");
  if (r.rest().size() != image_size) {
    return bad_part(fmt::format("{} bytes of records where {} were written", r.rest().size(), image_size));
  }
  std::map<std::string, persisted_subscription> subs;
  if (auto st = apply_records(subs, r.rest()); !st) return bad_part(st.err().reason);
  for (const auto& [key, s] : subs) {
    if (!in_part(key)) return bad_part(fmt::format("subscription {} is not in the part", key));
  }

  std::erase_if(subs_, [&](const auto& e) { return in_part(e.first); });
  subs_.merge(subs);
  if (with_keys) keys_ = std::move(keys);
  return {};
}

}  // namespace weir::subscriptions
