#include "storage/segment_reader.h"

#include <fmt/format.h>

#include "storage/log_format.h"

namespace weir::storage {

result<std::shared_ptr<random_access_file>> segment_reader::file_for(segment_id id) {
  std::lock_guard lock(mu_);
  if (auto it = open_.find(id); it != open_.end()) return it->second;
  auto file = env_.open_readable(join_path(dir_, format::segment_file_name(id)));
  if (!file) return file.err();
  std::shared_ptr<random_access_file> shared = std::move(*file);
  open_[id] = shared;
  return shared;
}

void segment_reader::forget(segment_id id) {
  std::lock_guard lock(mu_);
  open_.erase(id);
}

result<std::size_t> segment_reader::pread(log_position at, std::span<std::byte> out) {
  auto file = file_for(at.segment);
  if (!file) return file.err();
  return (*file)->read(at.offset, out);
}

result<stored_record> segment_reader::read_record(log_position at) {
  auto file = file_for(at.segment);
  if (!file) return file.err();
  const std::string where = fmt::format("{} at byte {}", format::segment_file_name(at.segment), at.offset);
  std::array<std::byte, format::record_header_size> hbuf{};
  auto n = (*file)->read(at.offset, hbuf);
  if (!n) return n.err();
  auto h = *n == hbuf.size() ? format::decode_record_header(hbuf) : std::nullopt;
  if (!h) return make_error(errc::corruption, where + ": no record header");
  std::vector<std::byte> whole(format::record_header_size + h->length);
  auto m = (*file)->read(at.offset, whole);
  if (!m) return m.err();
  if (*m != whole.size() || !format::record_crc_ok(whole)) {
    return make_error(errc::corruption, where + ": record truncated or CRC mismatch");
  }
  whole.erase(whole.begin(), whole.begin() + format::record_header_size);
  return stored_record{h->seq, h->type, std::move(whole)};
}

}  // namespace weir::storage
