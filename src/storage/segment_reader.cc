#include "storage/segment_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "storage/log_format.h"

namespace weir::storage {
namespace {

class wal_record_framing final : public record_framing {
 public:
  std::string file_name(segment_id id, bool alternate) const override {
    return alternate ? std::string() : format::segment_file_name(id);
  }
  std::size_t header_size() const override { return format::record_header_size; }
  std::optional<std::uint32_t> payload_length(std::span<const std::byte> header) const override {
    auto h = format::decode_record_header(header);
    if (!h) return std::nullopt;
    return h->length;
  }
  bool intact(std::span<const std::byte> record) const override { return format::record_crc_ok(record); }
};

}  // namespace

const record_framing& wal_framing() {
  static const wal_record_framing framing;
  return framing;
}

std::string segment_reader::where(log_position at) const {
  return fmt::format("{} at byte {}", framing_.file_name(at.segment, false), at.offset);
}

result<std::shared_ptr<random_access_file>> segment_reader::file_for(segment_id id) {
  std::lock_guard lock(mu_);
  if (auto it = open_.find(id); it != open_.end()) return it->second;
  auto file = env_.open_readable(join_path(dir_, framing_.file_name(id, false)));
  if (!file) {
    const std::string other = framing_.file_name(id, true);
    if (other.empty()) return file.err();
    auto renamed = env_.open_readable(join_path(dir_, other));
    if (!renamed) return file.err();  // the first name's error: the usual one
    file = std::move(renamed);
  }
  std::shared_ptr<random_access_file> shared = std::move(*file);
  open_[id] = shared;
  return shared;
}

void segment_reader::forget(segment_id id) {
  std::lock_guard lock(mu_);
  open_.erase(id);
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (it->first.segment != id) {
      ++it;
      continue;
    }
    cached_bytes_ -= it->second->size();
    it = cache_.erase(it);
  }
}

std::uint64_t segment_reader::cache_hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}

std::uint64_t segment_reader::record_loads() const {
  std::lock_guard lock(mu_);
  return loads_;
}

result<std::size_t> segment_reader::pread(log_position at, std::span<std::byte> out) {
  auto file = file_for(at.segment);
  if (!file) return file.err();
  return (*file)->read(at.offset, out);
}

result<segment_reader::record_bytes> segment_reader::load(log_position at) {
  {
    std::lock_guard lock(mu_);
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->first != at) continue;
      cache_.splice(cache_.begin(), cache_, it);
      ++hits_;
      return cache_.front().second;
    }
  }
  // Read outside the lock: two threads missing on the same record both read it, which is only wasted work.
  auto file = file_for(at.segment);
  if (!file) return file.err();
  const std::size_t header = framing_.header_size();
  std::array<std::byte, 64> hbuf{};
  auto n = (*file)->read(at.offset, std::span(hbuf).first(header));
  if (!n) return n.err();
  auto length = *n == header ? framing_.payload_length(std::span(hbuf).first(header)) : std::nullopt;
  if (!length) return make_error(errc::corruption, where(at) + ": no record header");
  auto whole = std::make_shared<std::vector<std::byte>>(header + *length);
  auto m = (*file)->read(at.offset, *whole);
  if (!m) return m.err();
  if (*m != whole->size() || !framing_.intact(*whole)) {
    return make_error(errc::corruption, where(at) + ": record truncated or CRC mismatch");
  }

  record_bytes rec = std::move(whole);
  std::lock_guard lock(mu_);
  ++loads_;
  if (opts_.cache_records == 0 || rec->size() > opts_.cache_bytes) return rec;
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->first == at) {  // another thread loaded it meanwhile
      cached_bytes_ -= it->second->size();
      cache_.erase(it);
      break;
    }
  }
  cache_.emplace_front(at, rec);
  cached_bytes_ += rec->size();
  while (cache_.size() > opts_.cache_records || cached_bytes_ > opts_.cache_bytes) {
    cached_bytes_ -= cache_.back().second->size();
    cache_.pop_back();
  }
  return rec;
}

result<stored_record> segment_reader::read_record(log_position at) {
  if (&framing_ != &wal_framing()) {
    return make_error(errc::invalid_argument, where(at) + ": read_record reads write-ahead log records only");
  }
  auto rec = load(at);
  if (!rec) return rec.err();
  std::span<const std::byte> whole(**rec);
  auto h = format::decode_record_header(whole.first(format::record_header_size));
  auto payload = whole.subspan(format::record_header_size);
  return stored_record{h->seq, h->type, std::vector<std::byte>(payload.begin(), payload.end())};
}

result<std::string> segment_reader::read_data(log_position record, std::uint64_t from, std::uint64_t n) {
  auto rec = load(record);
  if (!rec) return rec.err();
  const std::size_t header = framing_.header_size();
  const std::uint64_t length = (*rec)->size() - header;
  if (from > length || n > length - from) {
    return make_error(errc::invalid_argument,
                      fmt::format("{}: bytes [{}, {}+{}) are past the record's {}-byte payload",
                                  where(record), from, from, n, length));
  }
  const char* base = reinterpret_cast<const char*>((*rec)->data() + header);
  return std::string(base + from, static_cast<std::size_t>(n));
}

std::vector<result<std::string>> segment_reader::read_data_many(std::span<const data_piece> pieces,
                                                                std::size_t window) {
  std::vector<result<std::string>> out;
  out.reserve(pieces.size());
  std::size_t i = 0;
  while (i < pieces.size()) {
    // A run of pieces in one segment, in file order, whose records start within `window` of the
    // first; the span read covers each piece's bytes (the rest of a record's payload is read too when
    // it fits, so that its CRC can be checked).
    const data_piece& first = pieces[i];
    const std::uint64_t lo = first.record.offset;
    const std::size_t header = framing_.header_size();
    auto needs = [&](const data_piece& p) { return p.record.offset + header + p.from + p.n; };
    std::uint64_t hi = needs(first);
    std::size_t j = i + 1;
    while (j < pieces.size() && pieces[j].record.segment == first.record.segment &&
           pieces[j].record.offset >= pieces[j - 1].record.offset && needs(pieces[j]) - lo <= window) {
      hi = std::max(hi, needs(pieces[j]));
      ++j;
    }
    if (j - i == 1 || hi - lo > window) {
      out.push_back(read_data(first.record, first.from, first.n));
      ++i;
      continue;
    }
    // Up to `window` bytes: the span and, when the window has room, what follows it (command fields
    // after an append's data).
    std::vector<std::byte> buf(static_cast<std::size_t>(std::min<std::uint64_t>(window, hi - lo + 512)));
    std::uint64_t from_span = 0;  // records checked and read from the span
    auto got = pread(log_position{first.record.segment, lo}, buf);
    if (got) buf.resize(*got);
    for (std::size_t k = i; k < j; ++k) {
      const data_piece& p = pieces[k];
      const std::uint64_t at = p.record.offset - lo;
      std::optional<std::uint32_t> length;
      if (got && at + header <= buf.size())
        length = framing_.payload_length(std::span(buf).subspan(at, header));
      const std::uint64_t whole = length ? header + std::uint64_t{*length} : 0;
      if (!length || at + whole > buf.size()) {
        out.push_back(read_data(p.record, p.from, p.n));  // not in the span: alone (and its error)
        continue;
      }
      const std::span<const std::byte> record = std::span(buf).subspan(at, whole);
      if (!framing_.intact(record)) {
        out.push_back(read_data(p.record, p.from, p.n));  // reported (and named) by the single read
        continue;
      }
      if (p.from > *length || p.n > *length - p.from) {
        out.push_back(read_data(p.record, p.from, p.n));
        continue;
      }
      const char* data = reinterpret_cast<const char*>(record.data() + header);
      out.push_back(std::string(data + p.from, static_cast<std::size_t>(p.n)));
      ++from_span;
    }
    {
      std::lock_guard lock(mu_);
      loads_ += from_span;
    }
    i = j;
  }
  return out;
}

}  // namespace weir::storage
