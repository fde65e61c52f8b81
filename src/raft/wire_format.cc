#include "raft/wire_format.h"

#include <fmt/format.h>

#include "storage/crc32c.h"

namespace weir::raft::wire {
namespace {

error malformed(std::string reason) {
  return make_error(errc::malformed, std::move(reason));
}

// The smallest encoding of one entry and of one server: bounds the counts read from the wire before any
// allocation (a hostile count cannot make the decoder reserve gigabytes).
constexpr std::size_t min_entry_size = 8 + 1 + 4;
constexpr std::size_t min_server_size = 8 + 1 + 2;
constexpr std::size_t key_size = 8 + 8 + 4 * 4;
constexpr std::size_t min_piece_size = key_size + 4 + 4;

void put_key(byte_writer& w, const record_key& k) {
  w.u64(k.segment);
  w.u64(k.offset);
  w.u32(k.core);
  w.u32(k.data_offset);
  w.u32(k.begin);
  w.u32(k.size);
}

bool get_key(byte_reader& r, record_key& k) {
  return r.u64(k.segment) && r.u64(k.offset) && r.u32(k.core) && r.u32(k.data_offset) && r.u32(k.begin) &&
         r.u32(k.size);
}

struct body_encoder {
  byte_writer& w;
  void operator()(const append_entries& m) {
    w.u64(m.term.value());
    w.u64(m.prev_log_index.value());
    w.u64(m.prev_log_term.value());
    w.u64(m.leader_commit.value());
    w.u32(static_cast<std::uint32_t>(m.entries.size()));
    for (const entry& e : m.entries) {
      w.u64(e.term.value());
      w.u8(e.type);
      w.u32(static_cast<std::uint32_t>(e.data.size()));
      w.bytes(e.data);
    }
  }
  void operator()(const append_entries_result& m) {
    w.u64(m.term.value());
    w.u64(m.rejected.value());
    w.u64(m.last_log_index.value());
  }
  void operator()(const request_vote& m) {
    w.u64(m.term.value());
    w.u64(m.candidate.value());
    w.u64(m.last_log_index.value());
    w.u64(m.last_log_term.value());
    w.u8(m.disrupt_leader ? 1 : 0);
    w.u8(m.pre_vote ? 1 : 0);
  }
  void operator()(const request_vote_result& m) {
    w.u64(m.term.value());
    w.u8(m.vote_granted ? 1 : 0);
    w.u8(m.pre_vote);
  }
  void operator()(const install_snapshot& m) {
    w.u64(m.term.value());
    w.u64(m.last_index.value());
    w.u64(m.last_term.value());
    w.u64(m.conf_index.value());
    encode_servers(m.conf, w);
    w.u64(m.transfer);
    w.u32(m.chunks);
    w.u32(static_cast<std::uint32_t>(m.data.size()));
    w.bytes(m.data);
  }
  void operator()(const snapshot_chunk& m) {
    w.u64(m.transfer);
    w.u32(m.seq);
    w.u64(m.last_index.value());
    w.u64(m.last_term.value());
    w.u32(static_cast<std::uint32_t>(m.pieces.size()));
    for (const record_piece& p : m.pieces) {
      put_key(w, p.key);
      w.u32(p.piece_offset);
      w.u32(static_cast<std::uint32_t>(p.bytes.size()));
      w.bytes(p.bytes);
    }
  }
  void operator()(const snapshot_chunk_ack& m) {
    w.u64(m.transfer);
    w.u32(m.seq);
    w.u32(m.resume);
    w.u32(static_cast<std::uint32_t>(m.held.size()));
    for (const record_key& k : m.held) put_key(w, k);
  }
  void operator()(const timeout_now& m) {
    w.u64(m.term.value());
    w.u64(m.last_log_index.value());
    w.u64(m.last_log_term.value());
  }
};

bool get_bool(byte_reader& r, bool& out) {
  std::uint8_t v = 0;
  if (!r.u8(v) || v > 1) return false;
  out = v == 1;
  return true;
}

template <class Id>
bool get_id(byte_reader& r, Id& out) {
  std::uint64_t v = 0;
  if (!r.u64(v)) return false;
  out = Id(v);
  return true;
}

result<body> decode_fields(message_type type, byte_reader& r) {
  switch (type) {
    case message_type::append_entries: {
      append_entries m;
      std::uint32_t n = 0;
      if (!get_id(r, m.term) || !get_id(r, m.prev_log_index) || !get_id(r, m.prev_log_term) ||
          !get_id(r, m.leader_commit) || !r.u32(n))
        return malformed("append_entries: short header");
      if (n > r.remaining() / min_entry_size) return malformed(fmt::format("append_entries: {} entries", n));
      m.entries.reserve(n);
      for (std::uint32_t i = 0; i < n; ++i) {
        entry e;
        std::uint32_t len = 0;
        if (!get_id(r, e.term) || !r.u8(e.type) || !r.u32(len) || !r.bytes(len, e.data))
          return malformed(fmt::format("append_entries: entry {} is short", i));
        if (e.type < 1 || e.type > 3) return malformed(fmt::format("append_entries: entry type {}", e.type));
        m.entries.push_back(e);
      }
      return body(std::move(m));
    }
    case message_type::append_entries_result: {
      append_entries_result m;
      if (!get_id(r, m.term) || !get_id(r, m.rejected) || !get_id(r, m.last_log_index))
        return malformed("append_entries_result: short");
      return body(m);
    }
    case message_type::request_vote: {
      request_vote m;
      if (!get_id(r, m.term) || !get_id(r, m.candidate) || !get_id(r, m.last_log_index) ||
          !get_id(r, m.last_log_term) || !get_bool(r, m.disrupt_leader) || !get_bool(r, m.pre_vote))
        return malformed("request_vote: short or bad flag");
      return body(m);
    }
    case message_type::request_vote_result: {
      request_vote_result m;
      if (!get_id(r, m.term) || !get_bool(r, m.vote_granted) || !r.u8(m.pre_vote) || m.pre_vote > 2)
        return malformed("request_vote_result: short or bad flag");
      return body(m);
    }
    case message_type::install_snapshot: {
      install_snapshot m;
      std::uint32_t len = 0;
      if (!get_id(r, m.term) || !get_id(r, m.last_index) || !get_id(r, m.last_term) ||
          !get_id(r, m.conf_index) || !decode_servers(r, m.conf) || !r.u64(m.transfer) || !r.u32(m.chunks) ||
          !r.u32(len) || !r.bytes(len, m.data))
        return malformed("install_snapshot: short or bad configuration");
      if (m.transfer == 0 && m.chunks != 0) return malformed("install_snapshot: chunks without a transfer");
      return body(std::move(m));
    }
    case message_type::snapshot_chunk: {
      snapshot_chunk m;
      std::uint32_t n = 0;
      if (!r.u64(m.transfer) || !r.u32(m.seq) || !get_id(r, m.last_index) || !get_id(r, m.last_term) ||
          !r.u32(n))
        return malformed("snapshot_chunk: short header");
      if (m.transfer == 0) return malformed("snapshot_chunk: transfer 0");
      if (m.last_index.value() == 0) return malformed("snapshot_chunk: snapshot index 0");
      // Chunk 0 opens the transfer (no piece); every other chunk carries records.
      if ((m.seq == 0) != (n == 0))
        return malformed(fmt::format("snapshot_chunk: chunk {} with {} pieces", m.seq, n));
      if (n > r.remaining() / min_piece_size) return malformed(fmt::format("snapshot_chunk: {} pieces", n));
      m.pieces.reserve(n);
      for (std::uint32_t i = 0; i < n; ++i) {
        record_piece p;
        std::uint32_t len = 0;
        if (!get_key(r, p.key) || !r.u32(p.piece_offset) || !r.u32(len) || !r.bytes(len, p.bytes))
          return malformed(fmt::format("snapshot_chunk: piece {} is short", i));
        // A piece lies inside its record, holds bytes, and the record is somewhere (segment 0 is none).
        if (p.key.segment == 0 || p.key.size == 0 || len == 0 || p.piece_offset > p.key.size ||
            len > p.key.size - p.piece_offset)
          return malformed(fmt::format("snapshot_chunk: piece {} outside its record", i));
        m.pieces.push_back(p);
      }
      return body(std::move(m));
    }
    case message_type::snapshot_chunk_ack: {
      snapshot_chunk_ack m;
      std::uint32_t n = 0;
      if (!r.u64(m.transfer) || !r.u32(m.seq) || !r.u32(m.resume) || !r.u32(n))
        return malformed("snapshot_chunk_ack: short");
      if ((m.resume != 0 || n != 0) && m.seq != 0)
        return malformed("snapshot_chunk_ack: resume past the opening chunk");
      if (n > r.remaining() / key_size)
        return malformed(fmt::format("snapshot_chunk_ack: {} records held", n));
      m.held.resize(n);
      for (record_key& k : m.held) {
        // A record is somewhere (segment 0 is none) and holds bytes.
        if (!get_key(r, k) || k.segment == 0 || k.size == 0)
          return malformed("snapshot_chunk_ack: a record held is short or empty");
      }
      return body(std::move(m));
    }
    case message_type::timeout_now: {
      timeout_now m;
      if (!get_id(r, m.term) || !get_id(r, m.last_log_index) || !get_id(r, m.last_log_term))
        return malformed("timeout_now: short");
      return body(m);
    }
  }
  return malformed(fmt::format("message type {}", static_cast<int>(type)));
}

}  // namespace

message_type type_of(const body& b) {
  return static_cast<message_type>(b.index() + 1);
}

void encode_servers(std::span<const server> servers, byte_writer& w) {
  w.u32(static_cast<std::uint32_t>(servers.size()));
  for (const server& s : servers) {
    WEIR_ASSERT(s.address.size() <= 0xffff, "node {}: address of {} bytes", s.id.value(), s.address.size());
    w.u64(s.id.value());
    w.u8(s.role);
    w.u16(static_cast<std::uint16_t>(s.address.size()));
    w.text(s.address);
  }
}

bool decode_servers(byte_reader& r, std::vector<server>& out) {
  std::uint32_t n = 0;
  if (!r.u32(n) || n > r.remaining() / min_server_size) return false;
  out.clear();
  out.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    server s;
    std::uint16_t len = 0;
    std::span<const std::byte> addr;
    if (!get_id(r, s.id) || !r.u8(s.role) || s.role > 2 || !r.u16(len) || !r.bytes(len, addr)) return false;
    s.address = std::string_view(reinterpret_cast<const char*>(addr.data()), addr.size());
    out.push_back(s);
  }
  return true;
}

void encode_frame(const message& m, std::vector<std::byte>& out) {
  const std::size_t start = out.size();
  byte_writer w(out);
  w.u32(0);  // body_len, patched below
  w.u32(0);  // crc32c, patched below
  w.u32(m.group.value());
  w.u8(static_cast<std::uint8_t>(type_of(m.payload)));
  std::visit(body_encoder{w}, m.payload);
  const std::size_t body_len = out.size() - start - frame_header_size;
  WEIR_ASSERT(body_len <= max_frame_body, "raft frame body of {} bytes", body_len);
  const auto body_bytes = std::span<const std::byte>(out).subspan(start + frame_header_size, body_len);
  w.patch_u32(start, static_cast<std::uint32_t>(body_len));
  w.patch_u32(start + 4, storage::crc32c(body_bytes));
}

result<message> decode_body(std::span<const std::byte> in) {
  byte_reader r(in);
  std::uint32_t group = 0;
  std::uint8_t type = 0;
  if (!r.u32(group) || !r.u8(type)) return malformed("short message body");
  if (type < 1 || type > std::variant_size_v<body>) return malformed(fmt::format("message type {}", type));
  auto fields = decode_fields(static_cast<message_type>(type), r);
  if (!fields) return fields.err();
  if (r.remaining() != 0) return malformed(fmt::format("{} trailing bytes in message", r.remaining()));
  return message{group_id(group), std::move(fields).value()};
}

result<std::optional<decoded_frame>> decode_frame(std::span<const std::byte> in) {
  byte_reader r(in);
  std::uint32_t len = 0;
  std::uint32_t crc = 0;
  if (!r.u32(len) || !r.u32(crc)) return std::optional<decoded_frame>();
  if (len > max_frame_body) return malformed(fmt::format("frame body of {} bytes", len));
  std::span<const std::byte> body_bytes;
  if (!r.bytes(len, body_bytes)) return std::optional<decoded_frame>();
  if (storage::crc32c(body_bytes) != crc) return malformed("frame checksum mismatch");
  auto m = decode_body(body_bytes);
  if (!m) return m.err();
  return std::optional<decoded_frame>(decoded_frame{frame_header_size + len, std::move(m).value()});
}

}  // namespace weir::raft::wire
