#include "raft/log_record.h"

#include <cstring>

#include <fmt/format.h>

#include "raft/byte_codec.h"
#include "storage/crc32c.h"

namespace weir::raft::record {
namespace {

error malformed(std::string reason) {
  return make_error(errc::malformed, std::move(reason));
}

constexpr std::size_t min_entry_size = 8 + 1 + 4;

struct body_encoder {
  byte_writer& w;
  void items(log_index first, const std::vector<wire::entry>& items) {
    w.u64(first.value());
    w.u32(static_cast<std::uint32_t>(items.size()));
    for (const wire::entry& e : items) {
      w.u64(e.term.value());
      w.u8(e.type);
      w.u32(static_cast<std::uint32_t>(e.data.size()));
      w.bytes(e.data);
    }
  }
  void operator()(const entries& r) { items(r.first, r.items); }
  void operator()(const carry& r) { items(r.first, r.items); }
  void operator()(const state& r) {
    w.u64(r.term.value());
    w.u64(r.vote.value());
    w.u64(r.next.value());
    w.u8(r.snap ? 1 : 0);
    if (r.snap) (*this)(*r.snap);
  }
  void operator()(const term& r) { w.u64(r.value.value()); }
  void operator()(const vote& r) { w.u64(r.value.value()); }
  void operator()(const truncate& r) { w.u64(r.from.value()); }
  void operator()(const snapshot& r) {
    w.u64(r.index.value());
    w.u64(r.term.value());
    w.u64(r.conf_index.value());
    wire::encode_servers(r.conf, w);
    w.u32(r.trailing);
    w.u32(static_cast<std::uint32_t>(r.data.size()));
    w.bytes(r.data);
  }
};

template <class Id>
bool get_id(byte_reader& r, Id& out) {
  std::uint64_t v = 0;
  if (!r.u64(v)) return false;
  out = Id(v);
  return true;
}

template <class Rec>
result<body> decode_items(byte_reader& r) {
  Rec rec;
  std::uint32_t n = 0;
  if (!get_id(r, rec.first) || !r.u32(n)) return malformed("entries: short header");
  if (rec.first.value() == 0) return malformed("entries: first index 0");
  if (n == 0 || n > r.remaining() / min_entry_size) return malformed(fmt::format("entries: count {}", n));
  rec.items.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    wire::entry e;
    std::uint32_t len = 0;
    if (!get_id(r, e.term) || !r.u8(e.type) || !r.u32(len) || !r.bytes(len, e.data))
      return malformed(fmt::format("entries: entry {} is short", i));
    if (e.type < 1 || e.type > 3) return malformed(fmt::format("entries: entry type {}", e.type));
    rec.items.push_back(e);
  }
  return body(std::move(rec));
}

bool decode_snapshot(byte_reader& r, snapshot& rec) {
  std::uint32_t len = 0;
  return get_id(r, rec.index) && get_id(r, rec.term) && get_id(r, rec.conf_index) &&
         wire::decode_servers(r, rec.conf) && r.u32(rec.trailing) && r.u32(len) && r.bytes(len, rec.data);
}

result<body> decode_payload(std::uint8_t type, byte_reader& r) {
  switch (type) {
    case 1:
      return decode_items<entries>(r);
    case 2: {
      term rec;
      if (!get_id(r, rec.value)) return malformed("term: short");
      return body(rec);
    }
    case 3: {
      vote rec;
      if (!get_id(r, rec.value)) return malformed("vote: short");
      return body(rec);
    }
    case 4: {
      truncate rec;
      if (!get_id(r, rec.from) || rec.from.value() == 0) return malformed("truncate: short or index 0");
      return body(rec);
    }
    case 5: {
      snapshot rec;
      if (!decode_snapshot(r, rec)) return malformed("snapshot: short or bad configuration");
      return body(std::move(rec));
    }
    case 6: {
      state rec;
      std::uint8_t has_snapshot = 0;
      if (!get_id(r, rec.term) || !get_id(r, rec.vote) || !get_id(r, rec.next) || !r.u8(has_snapshot))
        return malformed("state: short");
      if (rec.next.value() == 0 || has_snapshot > 1)
        return malformed(
            fmt::format("state: next index {}, snapshot flag {}", rec.next.value(), has_snapshot));
      if (has_snapshot == 1 && !decode_snapshot(r, rec.snap.emplace()))
        return malformed("state: short or bad snapshot");
      return body(std::move(rec));
    }
    case 7:
      return decode_items<carry>(r);
    default:
      return malformed(fmt::format("record type {}", type));
  }
}

}  // namespace

std::array<std::byte, file_header_size> encode_file_header() {
  std::vector<std::byte> out;
  byte_writer w(out);
  w.text(std::string_view(file_magic.data(), file_magic.size()));
  w.u32(file_version);
  w.u32(storage::crc32c(out));
  std::array<std::byte, file_header_size> h{};
  std::memcpy(h.data(), out.data(), h.size());
  return h;
}

bool file_header_ok(std::span<const std::byte> in) {
  return file_header_version(in) == file_version;
}

std::optional<std::uint32_t> file_header_version(std::span<const std::byte> in) {
  if (in.size() < file_header_size) return std::nullopt;
  byte_reader r(in.first(file_header_size));
  std::span<const std::byte> magic;
  std::uint32_t version = 0;
  std::uint32_t crc = 0;
  if (!r.bytes(file_magic.size(), magic) || !r.u32(version) || !r.u32(crc)) return std::nullopt;
  if (std::memcmp(magic.data(), file_magic.data(), file_magic.size()) != 0) return std::nullopt;
  if (storage::crc32c(in.first(file_magic.size() + 4)) != crc) return std::nullopt;
  if (version < min_file_version || version > file_version) return std::nullopt;
  return version;
}

void encode_record(const log_record& r, std::vector<std::byte>& out) {
  const std::size_t start = out.size();
  byte_writer w(out);
  w.u32(0);  // body_len, patched below
  w.u32(0);  // crc32c, patched below
  w.u8(static_cast<std::uint8_t>(r.payload.index() + 1));
  w.u32(r.group.value());
  std::visit(body_encoder{w}, r.payload);
  const std::size_t body_len = out.size() - start - record_header_size;
  WEIR_ASSERT(body_len <= max_record_body, "node log record body of {} bytes", body_len);
  w.patch_u32(start, static_cast<std::uint32_t>(body_len));
  w.patch_u32(start + 4,
              storage::crc32c(std::span<const std::byte>(out).subspan(start + record_header_size, body_len)));
}

result<log_record> decode_body(std::span<const std::byte> in) {
  byte_reader r(in);
  std::uint8_t type = 0;
  std::uint32_t group = 0;
  if (!r.u8(type) || !r.u32(group)) return malformed("short record body");
  auto payload = decode_payload(type, r);
  if (!payload) return payload.err();
  if (r.remaining() != 0) return malformed(fmt::format("{} trailing bytes in record", r.remaining()));
  return log_record{group_id(group), std::move(payload).value()};
}

result<std::optional<decoded_record>> decode_record(std::span<const std::byte> in) {
  byte_reader r(in);
  std::uint32_t len = 0;
  std::uint32_t crc = 0;
  if (!r.u32(len) || !r.u32(crc)) return std::optional<decoded_record>();
  if (len > max_record_body) return malformed(fmt::format("record body of {} bytes", len));
  std::span<const std::byte> body_bytes;
  if (!r.bytes(len, body_bytes)) return std::optional<decoded_record>();
  if (storage::crc32c(body_bytes) != crc) return malformed("record checksum mismatch");
  auto rec = decode_body(body_bytes);
  if (!rec) return rec.err();
  return std::optional<decoded_record>(decoded_record{record_header_size + len, std::move(rec).value()});
}

}  // namespace weir::raft::record
