#include "tier/restore_snapshot.h"

#include <algorithm>
#include <cstring>

#include "storage/crc32c.h"
#include "tier/little_endian.h"
#include "tier/object_format.h"

namespace weir::tier {

namespace {

constexpr char magic[8] = {'W', 'E', 'I', 'R', 'R', 'E', 'S', 'T'};
constexpr std::uint16_t version = 1;

error snapshot_error(object_format_errc code, std::string reason) {
  return make_error(code, "restore snapshot: " + std::move(reason));
}

}  // namespace

object_bytes encode_restore_snapshot(const restore_snapshot_header& h, std::span<const std::byte> state) {
  object_bytes out;
  out.reserve(restore_snapshot_header_size + state.size());
  for (char c : magic) out.push_back(static_cast<std::byte>(c));
  put_le<std::uint16_t>(out, version);
  put_le<std::uint16_t>(out, 0);
  put_le<std::uint32_t>(out, h.group.value());
  put_le<std::uint32_t>(out, h.groups);
  put_le<std::uint16_t>(out, h.epoch.value());
  put_le<std::uint16_t>(out, 0);
  put_le<std::uint64_t>(out, h.lsn);
  put_le<std::uint64_t>(out, static_cast<std::uint64_t>(h.taken_at_ms));
  put_le<std::uint32_t>(out, storage::crc32c(state));
  put_le<std::uint32_t>(out, storage::crc32c(std::span<const std::byte>(out)));
  out.insert(out.end(), state.begin(), state.end());
  return out;
}

result<restore_snapshot_view> decode_restore_snapshot(std::span<const std::byte> object) {
  if (object.size() < restore_snapshot_header_size) {
    return snapshot_error(object_format_errc::truncated, std::to_string(object.size()) + " bytes");
  }
  const std::byte* p = object.data();
  if (std::memcmp(p, magic, sizeof magic) != 0) return snapshot_error(object_format_errc::bad_magic, "magic");
  if (get_le<std::uint32_t>(p + 44) != storage::crc32c(object.first(44))) {
    return snapshot_error(object_format_errc::bad_checksum, "header checksum");
  }
  if (get_le<std::uint16_t>(p + 8) != version) {
    return snapshot_error(object_format_errc::bad_version,
                          "version " + std::to_string(get_le<std::uint16_t>(p + 8)));
  }
  restore_snapshot_view v;
  v.header.group = cold_group{get_le<std::uint32_t>(p + 12)};
  v.header.groups = get_le<std::uint32_t>(p + 16);
  v.header.epoch = cold_epoch{get_le<std::uint16_t>(p + 20)};
  v.header.lsn = get_le<std::uint64_t>(p + 24);
  v.header.taken_at_ms = static_cast<std::int64_t>(get_le<std::uint64_t>(p + 32));
  if (v.header.groups == 0 || v.header.group.value() >= v.header.groups) {
    return snapshot_error(
        object_format_errc::inconsistent,
        "group " + std::to_string(v.header.group.value()) + " of " + std::to_string(v.header.groups));
  }
  v.state = object.subspan(restore_snapshot_header_size);
  if (get_le<std::uint32_t>(p + 40) != storage::crc32c(v.state)) {
    return snapshot_error(object_format_errc::bad_checksum, "state checksum");
  }
  return v;
}

}  // namespace weir::tier
