#include "storage/log_format.h"

#include <charconv>

#include <fmt/format.h>

#include "base/assert.h"
#include "storage/crc32c.h"

namespace weir::storage::format {

namespace {

std::span<const std::byte> bytes_of(const std::array<char, 8>& a) {
  return std::as_bytes(std::span<const char>(a.data(), a.size()));
}

bool magic_is(std::span<const std::byte> bytes, const std::array<char, 8>& magic) {
  return std::memcmp(bytes.data(), magic.data(), magic.size()) == 0;
}

std::optional<std::uint64_t> parse_number(std::string_view digits) {
  if (digits.size() != 20) return std::nullopt;
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc{} || ptr != digits.data() + digits.size()) return std::nullopt;
  return v;
}

}  // namespace

std::array<std::byte, segment_header_size> encode_segment_header(const segment_header& h) {
  std::array<std::byte, segment_header_size> out{};
  std::memcpy(out.data(), bytes_of(segment_magic).data(), 8);
  put_u32(out.data() + 8, version);
  put_u64(out.data() + 16, h.id.value());
  put_u64(out.data() + 24, h.base.value());
  put_u32(out.data() + 32, crc32c(std::span<const std::byte>(out.data(), 32)));
  return out;
}

std::optional<segment_header> decode_segment_header(std::span<const std::byte> bytes) {
  if (bytes.size() < segment_header_size || !magic_is(bytes, segment_magic)) return std::nullopt;
  if (get_u32(bytes.data() + 8) != version) return std::nullopt;
  if (get_u32(bytes.data() + 32) != crc32c(bytes.first(32))) return std::nullopt;
  return segment_header{segment_id{get_u64(bytes.data() + 16)}, lsn{get_u64(bytes.data() + 24)}};
}

void encode_record_unsealed(std::span<std::byte> out, std::uint8_t type, std::span<const std::byte> payload) {
  WEIR_ASSERT(out.size() == record_header_size + payload.size(), "record buffer {} for payload {}",
              out.size(), payload.size());
  WEIR_ASSERT(type != 0, "record type 0 is reserved");
  WEIR_ASSERT(payload.size() <= max_record_payload, "payload {} too large", payload.size());
  std::memset(out.data(), 0, record_header_size);
  put_u32(out.data() + 4, static_cast<std::uint32_t>(payload.size()));
  out[16] = static_cast<std::byte>(type);
  if (!payload.empty()) std::memcpy(out.data() + record_header_size, payload.data(), payload.size());
}

void seal_record(std::span<std::byte> record, lsn seq) {
  put_u64(record.data() + 8, seq.value());
  put_u32(record.data(), crc32c(record.subspan(4)));
}

void encode_record(std::span<std::byte> out, lsn seq, std::uint8_t type, std::span<const std::byte> payload) {
  encode_record_unsealed(out, type, payload);
  seal_record(out, seq);
}

std::optional<record_header> decode_record_header(std::span<const std::byte> bytes) {
  if (bytes.size() < record_header_size) return std::nullopt;
  record_header h;
  h.crc = get_u32(bytes.data());
  h.length = get_u32(bytes.data() + 4);
  h.seq = lsn{get_u64(bytes.data() + 8)};
  h.type = static_cast<std::uint8_t>(bytes[16]);
  if (h.type == 0 || h.length > max_record_payload) return std::nullopt;
  for (std::size_t i = 17; i < record_header_size; ++i) {
    if (bytes[i] != std::byte{0}) return std::nullopt;
  }
  return h;
}

bool record_crc_ok(std::span<const std::byte> record) {
  if (record.size() < record_header_size) return false;
  return get_u32(record.data()) == crc32c(record.subspan(4));
}

std::array<std::byte, checkpoint_header_size> encode_checkpoint_header(lsn covered,
                                                                       std::span<const std::byte> blob) {
  std::array<std::byte, checkpoint_header_size> out{};
  std::memcpy(out.data(), bytes_of(checkpoint_magic).data(), 8);
  put_u32(out.data() + 8, version);
  put_u64(out.data() + 16, covered.value());
  put_u64(out.data() + 24, blob.size());
  std::uint32_t crc = crc32c(std::span<const std::byte>(out.data(), 32));
  put_u32(out.data() + 32, crc32c_extend(crc, blob));
  return out;
}

std::optional<checkpoint_header> decode_checkpoint_header(std::span<const std::byte> bytes) {
  if (bytes.size() < checkpoint_header_size || !magic_is(bytes, checkpoint_magic)) return std::nullopt;
  if (get_u32(bytes.data() + 8) != version) return std::nullopt;
  return checkpoint_header{lsn{get_u64(bytes.data() + 16)}, get_u64(bytes.data() + 24),
                           get_u32(bytes.data() + 32)};
}

bool checkpoint_crc_ok(std::span<const std::byte> header, std::span<const std::byte> blob) {
  if (header.size() < checkpoint_header_size) return false;
  std::uint32_t crc = crc32c(header.first(32));
  return get_u32(header.data() + 32) == crc32c_extend(crc, blob);
}

std::string segment_file_name(segment_id id) {
  return fmt::format("{:020}.log", id.value());
}

std::string checkpoint_file_name(lsn covered) {
  return fmt::format("checkpoint-{:020}.ckpt", covered.value());
}

std::optional<segment_id> parse_segment_file_name(std::string_view name) {
  if (!name.ends_with(".log")) return std::nullopt;
  auto v = parse_number(name.substr(0, name.size() - 4));
  if (!v || *v == 0) return std::nullopt;
  return segment_id{*v};
}

std::optional<lsn> parse_checkpoint_file_name(std::string_view name) {
  constexpr std::string_view prefix = "checkpoint-";
  if (!name.starts_with(prefix) || !name.ends_with(".ckpt")) return std::nullopt;
  auto v = parse_number(name.substr(prefix.size(), name.size() - prefix.size() - 5));
  if (!v) return std::nullopt;
  return lsn{*v};
}

}  // namespace weir::storage::format
