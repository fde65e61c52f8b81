#include "raft/node_log_framing.h"

#include <fmt/format.h>

#include "raft/log_record.h"
#include "storage/crc32c.h"
#include "storage/log_format.h"

namespace weir::raft {

std::string node_log_framing::file_name(storage::segment_id id, bool alternate) const {
  if (alternate) return fmt::format("{}.kept.{:08}", base_, id.value());
  return fmt::format("{}.{:08}", base_, id.value());
}

std::size_t node_log_framing::header_size() const {
  return record::record_header_size;
}

std::optional<std::uint32_t> node_log_framing::payload_length(std::span<const std::byte> header) const {
  if (header.size() < record::record_header_size) return std::nullopt;
  const std::uint32_t body = storage::format::get_u32(header.data());
  if (body == 0 || body > record::max_record_body) return std::nullopt;
  return body;
}

bool node_log_framing::intact(std::span<const std::byte> record) const {
  if (record.size() < record::record_header_size) return false;
  const std::uint32_t body = storage::format::get_u32(record.data());
  if (record.size() != record::record_header_size + std::size_t{body}) return false;
  return storage::crc32c(record.subspan(record::record_header_size)) ==
         storage::format::get_u32(record.data() + 4);
}

}  // namespace weir::raft
