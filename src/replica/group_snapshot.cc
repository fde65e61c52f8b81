#include "replica/group_snapshot.h"

#include <cstdint>
#include <limits>
#include <string>

#include "base/assert.h"
#include "raft/byte_codec.h"
#include "raft/types.h"

namespace weir::replica {

namespace {
constexpr std::uint8_t without_cold = 1;
constexpr std::uint8_t with_cold = 2;
}  // namespace

std::vector<std::byte> encode_group_snapshot(std::span<const std::byte> streams,
                                             std::span<const std::byte> subscriptions,
                                             std::span<const std::byte> cold) {
  std::vector<std::byte> out;
  out.reserve(13 + streams.size() + subscriptions.size() + cold.size());
  raft::byte_writer w(out);
  const bool has_cold = !cold.empty();
  w.u8(has_cold ? with_cold : without_cold);
  const std::span<const std::byte> parts[] = {streams, subscriptions, cold};
  for (auto part : std::span(parts).first(has_cold ? 3 : 2)) {
    WEIR_ASSERT(part.size() <= std::numeric_limits<std::uint32_t>::max(), "snapshot part of {} bytes",
                part.size());
    w.u32(static_cast<std::uint32_t>(part.size()));
    w.bytes(part);
  }
  return out;
}

result<group_snapshot_view> decode_group_snapshot(std::span<const std::byte> in) {
  raft::byte_reader r(in);
  std::uint8_t v = 0;
  if (!r.u8(v)) return make_error(raft::errc::malformed, "group snapshot: empty");
  if (v != without_cold && v != with_cold)
    return make_error(raft::errc::malformed, "group snapshot: unknown version " + std::to_string(v));
  group_snapshot_view out;
  std::span<const std::byte>* parts[] = {&out.streams, &out.subscriptions, &out.cold};
  for (auto* part : std::span(parts).first(v == with_cold ? 3 : 2)) {
    std::uint32_t n = 0;
    if (!r.u32(n) || !r.bytes(n, *part))
      return make_error(raft::errc::malformed, "group snapshot: truncated");
  }
  if (r.remaining() != 0) return make_error(raft::errc::malformed, "group snapshot: bytes after the end");
  return out;
}

}  // namespace weir::replica
