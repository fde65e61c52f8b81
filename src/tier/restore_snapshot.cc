#include "tier/restore_snapshot.h"

#include <algorithm>
#include <cstring>

#include "base/assert.h"
#include "storage/crc32c.h"
#include "tier/little_endian.h"
#include "tier/object_format.h"

namespace weir::tier {

namespace {

constexpr char magic[8] = {'W', 'E', 'I', 'R', 'R', 'E', 'S', 'T'};
constexpr std::uint16_t version_whole = 1;
constexpr std::uint16_t version_parts = 2;
constexpr std::size_t part_entry_size = 16;

error snapshot_error(object_format_errc code, std::string reason) {
  return make_error(code, "restore snapshot: " + std::move(reason));
}

// The 48-byte header, appended to `out`; `body_crc`: the state's CRC (version 1) or the table's (2).
void put_header(object_bytes& out, const restore_snapshot_header& h, std::uint16_t version,
                std::uint32_t body_crc) {
  const std::size_t at = out.size();
  for (char c : magic) out.push_back(static_cast<std::byte>(c));
  put_le<std::uint16_t>(out, version);
  put_le<std::uint16_t>(out, 0);
  put_le<std::uint32_t>(out, h.group.value());
  put_le<std::uint32_t>(out, h.groups);
  put_le<std::uint16_t>(out, h.epoch.value());
  put_le<std::uint16_t>(out, 0);
  put_le<std::uint64_t>(out, h.lsn);
  put_le<std::uint64_t>(out, static_cast<std::uint64_t>(h.taken_at_ms));
  put_le<std::uint32_t>(out, body_crc);
  put_le<std::uint32_t>(out, storage::crc32c(std::span<const std::byte>(out).subspan(at)));
}

object_bytes as_bytes_vector(std::span<const std::byte> s) {
  return object_bytes(s.begin(), s.end());
}

}  // namespace

object_bytes encode_restore_snapshot(const restore_snapshot_header& h, std::span<const std::byte> state) {
  object_bytes out;
  out.reserve(restore_snapshot_header_size + state.size());
  put_header(out, h, version_whole, storage::crc32c(state));
  out.insert(out.end(), state.begin(), state.end());
  return out;
}

std::uint64_t restore_snapshot_objects::bytes() const {
  std::uint64_t n = head.size();
  for (const object_bytes& p : parts) n += p.size();
  return n;
}

restore_snapshot_objects encode_restore_snapshot_objects(const restore_snapshot_header& h,
                                                         std::span<const std::byte> state,
                                                         std::uint64_t max_object) {
  WEIR_ASSERT(max_object > restore_snapshot_header_size, "restore snapshot objects of {} bytes", max_object);
  restore_snapshot_objects out;
  if (state.size() <= max_object - restore_snapshot_header_size) {
    out.head = encode_restore_snapshot(h, state);
    return out;
  }
  object_bytes table;
  const std::uint64_t parts = (state.size() + max_object - 1) / max_object;
  put_le<std::uint32_t>(table, static_cast<std::uint32_t>(parts));
  put_le<std::uint32_t>(table, 0);
  for (std::uint64_t at = 0; at < state.size(); at += max_object) {
    out.parts.push_back(
        as_bytes_vector(state.subspan(at, std::min<std::uint64_t>(max_object, state.size() - at))));
    put_le<std::uint64_t>(table, out.parts.back().size());
    put_le<std::uint32_t>(table, storage::crc32c(out.parts.back()));
    put_le<std::uint32_t>(table, 0);
  }
  out.head.reserve(restore_snapshot_header_size + table.size());
  put_header(out.head, h, version_parts, storage::crc32c(table));
  out.head.insert(out.head.end(), table.begin(), table.end());
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
  const std::uint16_t version = get_le<std::uint16_t>(p + 8);
  if (version != version_whole && version != version_parts) {
    return snapshot_error(object_format_errc::bad_version, "version " + std::to_string(version));
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
  const std::span<const std::byte> body = object.subspan(restore_snapshot_header_size);
  if (get_le<std::uint32_t>(p + 40) != storage::crc32c(body)) {
    return snapshot_error(object_format_errc::bad_checksum,
                          version == version_whole ? "state checksum" : "part table checksum");
  }
  if (version == version_whole) {
    v.state = body;
    return v;
  }
  const std::uint32_t parts = body.size() >= 8 ? get_le<std::uint32_t>(body.data()) : 0;
  if (parts == 0 || body.size() != 8 + std::uint64_t{parts} * part_entry_size) {
    return snapshot_error(object_format_errc::inconsistent,
                          "a part table of " + std::to_string(body.size()) + " bytes");
  }
  for (std::uint32_t i = 0; i < parts; ++i) {
    const std::byte* e = body.data() + 8 + std::size_t{i} * part_entry_size;
    v.parts.push_back(restore_snapshot_part{get_le<std::uint64_t>(e), get_le<std::uint32_t>(e + 8)});
  }
  return v;
}

result<object_bytes> join_restore_snapshot(
    object_bytes head, const std::function<result<object_bytes>(std::uint32_t)>& get_part) {
  auto v = decode_restore_snapshot(head);
  if (!v) return v.err();
  if (v->parts.empty()) return head;
  std::uint64_t total = 0;
  for (const restore_snapshot_part& part : v->parts) total += part.size;
  object_bytes out;
  out.reserve(restore_snapshot_header_size + std::min<std::uint64_t>(total, 1ull << 30));
  out.resize(restore_snapshot_header_size);  // written once the state's CRC is known
  std::uint32_t crc = storage::crc32c({});
  for (std::uint32_t i = 0; i < v->parts.size(); ++i) {
    auto got = get_part(i);
    if (!got) return got.err();
    const restore_snapshot_part& want = v->parts[i];
    if (got->size() != want.size || storage::crc32c(*got) != want.crc) {
      return snapshot_error(object_format_errc::bad_checksum,
                            "part " + std::to_string(i) + " (" + std::to_string(got->size()) +
                                " bytes) is not the one its head names (" + std::to_string(want.size) + ")");
    }
    crc = storage::crc32c_extend(crc, *got);
    out.insert(out.end(), got->begin(), got->end());
  }
  object_bytes header;
  put_header(header, v->header, version_whole, crc);
  std::copy(header.begin(), header.end(), out.begin());
  return out;
}

result<object_bytes> read_restore_snapshot(object_store& store, const std::string& key) {
  const std::optional<object_name> name = parse_snapshot_key(key);
  if (!name) return snapshot_error(object_format_errc::inconsistent, key + " is not a snapshot key");
  auto head = store.get_range(key, 0, 0);
  if (!head) return head.err().to_error();
  return join_restore_snapshot(std::move(head->bytes), [&](std::uint32_t part) -> result<object_bytes> {
    const std::string part_key = snapshot_part_key(*name, part);
    auto got = store.get_range(part_key, 0, 0);
    if (!got) return make_error(got.err().kind, "reading " + part_key + ": " + got.err().describe());
    return std::move(got->bytes);
  });
}

}  // namespace weir::tier
