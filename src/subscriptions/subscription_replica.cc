#include "subscriptions/subscription_replica.h"

#include <limits>

#include <fmt/format.h>

#include "base/assert.h"
#include "subscriptions/subscription_log.h"

namespace weir::subscriptions {
namespace {

enum class op : std::uint8_t { records = 1, key = 2 };

error malformed(std::string_view what) {
  return make_error(store_errc::corrupt, fmt::format("subscription entry: {}", what));
}

void put_u8(std::vector<std::byte>& out, std::uint8_t v) {
  out.push_back(std::byte{v});
}

void put_le(std::vector<std::byte>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(std::byte(static_cast<std::uint8_t>(v >> (8 * i))));
}

void put_text(std::vector<std::byte>& out, std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

// Reads little-endian integers and strings; never past the end.
class reader {
 public:
  explicit reader(std::span<const std::byte> in) : in_(in) {}
  bool le(std::uint64_t& v, std::size_t bytes) {
    if (in_.size() - pos_ < bytes) return false;
    v = 0;
    for (std::size_t i = 0; i < bytes; ++i)
      v |= std::uint64_t(std::to_integer<std::uint8_t>(in_[pos_ + i])) << (8 * i);
    pos_ += bytes;
    return true;
  }
  bool text16(std::string& out) {
    std::uint64_t n = 0;
    if (!le(n, 2) || in_.size() - pos_ < n) return false;
    out.assign(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  std::span<const std::byte> rest() const { return in_.subspan(pos_); }
  bool at_end() const { return pos_ == in_.size(); }

 private:
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<std::byte> encode_records_entry(std::string_view records) {
  std::vector<std::byte> out;
  out.reserve(1 + records.size());
  put_u8(out, static_cast<std::uint8_t>(op::records));
  put_text(out, records);
  return out;
}

std::vector<std::byte> encode_key_entry(std::uint64_t node, const node_public_key& key) {
  WEIR_ASSERT(key.kid.size() <= std::numeric_limits<std::uint16_t>::max() &&
                  key.x.size() <= std::numeric_limits<std::uint16_t>::max(),
              "node key of {} + {} bytes", key.kid.size(), key.x.size());
  std::vector<std::byte> out;
  put_u8(out, static_cast<std::uint8_t>(op::key));
  put_le(out, node, 8);
  put_le(out, key.kid.size(), 2);
  put_text(out, key.kid);
  put_le(out, key.x.size(), 2);
  put_text(out, key.x);
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
      if (!r.le(k.node, 8) || !r.text16(k.key.kid) || !r.text16(k.key.x)) return malformed("short node key");
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
