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

error malformed(std::string_view what) {
  return make_error(store_errc::corrupt, fmt::format("subscription entry: {}", what));
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
  WEIR_ASSERT(key.kid.size() <= std::numeric_limits<std::uint16_t>::max() &&
                  key.x.size() <= std::numeric_limits<std::uint16_t>::max(),
              "node key of {} + {} bytes", key.kid.size(), key.x.size());
  std::vector<std::byte> out;
  put_le(out, static_cast<std::uint8_t>(op::key), 1);
  put_le(out, node, 8);
  put_string(out, key.kid, 2);
  put_string(out, key.x, 2);
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

}  // namespace weir::subscriptions
