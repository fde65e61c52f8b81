#include "tier/object_format.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "storage/crc32c.h"
#include "tier/little_endian.h"

namespace weir::tier {
namespace {

constexpr char header_magic[8] = {'W', 'E', 'I', 'R', 'C', 'O', 'L', 'D'};
constexpr char trailer_magic[8] = {'W', 'E', 'I', 'R', 'T', 'A', 'I', 'L'};     // version 1
constexpr char trailer_magic_v2[8] = {'W', 'E', 'I', 'R', 'T', 'A', 'L', '2'};  // version 2
// What version 2 adds to the footer per range: u64 first begin, u32 count, u32 CRC.
constexpr std::size_t range_records_bytes = 8 + 4 + 4;
// The smallest encoded range: u16 name length, three u64 and a u64 length with an empty name.
constexpr std::size_t min_range_bytes = 2 + 8 * 4;

weir::error format_error(object_format_errc code, std::string reason) {
  return make_error(code, std::move(reason));
}

// A bounds-checked cursor over a byte span.
struct byte_cursor {
  std::span<const std::byte> in;
  std::size_t pos = 0;
  bool ok = true;

  template <class T>
  T take() {
    if (!ok || in.size() - pos < sizeof(T)) {
      ok = false;
      return 0;
    }
    T v = get_le<T>(in.data() + pos);
    pos += sizeof(T);
    return v;
  }
  std::string take_string(std::size_t n) {
    if (!ok || in.size() - pos < n) {
      ok = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(in.data() + pos), n);
    pos += n;
    return s;
  }
};

void put_crc_of(object_bytes& out, std::size_t from) {
  put_le<std::uint32_t>(out, storage::crc32c(std::span(out).subspan(from)));
}

}  // namespace

std::uint64_t stored_data_size(std::uint64_t data_length, std::uint32_t block_size) {
  std::uint64_t blocks = (data_length + block_size - 1) / block_size;
  return data_length + 4 * blocks;
}

object_writer::object_writer(cold_group group, std::uint32_t block_size, std::size_t reserve,
                             object_bytes buffer)
    : group_(group), block_size_(block_size), out_(std::move(buffer)) {
  WEIR_ASSERT(block_size >= 1 && block_size <= max_object_block_size, "object block size {} out of range",
              block_size);
  out_.clear();
  out_.reserve(std::max(reserve, object_header_size));
  out_.insert(out_.end(), reinterpret_cast<const std::byte*>(header_magic),
              reinterpret_cast<const std::byte*>(header_magic) + 8);
  put_le<std::uint16_t>(out_, object_format_version);
  put_le<std::uint16_t>(out_, 0);
  put_le<std::uint32_t>(out_, block_size_);
  put_le<std::uint32_t>(out_, group_.value());
  put_le<std::uint64_t>(out_, 0);
  put_crc_of(out_, 0);
}

void object_writer::append_data(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const std::size_t n = std::min<std::size_t>(block_size_ - block_fill_, bytes.size());
    auto part = bytes.first(n);
    out_.insert(out_.end(), part.begin(), part.end());
    block_crc_ = storage::crc32c_extend(block_crc_, part);
    block_fill_ += static_cast<std::uint32_t>(n);
    data_size_ += n;
    bytes = bytes.subspan(n);
    if (block_fill_ == block_size_) {
      put_le<std::uint32_t>(out_, block_crc_);
      block_fill_ = 0;
      block_crc_ = 0;
    }
  }
}

const object_range& object_writer::add(std::string_view stream, streams::stream_offset first,
                                       streams::stream_offset end, std::span<const std::byte> bytes,
                                       std::span<const object_record> records) {
  WEIR_ASSERT(!finished_, "object_writer::add after finish");
  WEIR_ASSERT(stream.size() <= max_stream_name_bytes, "stream name of {} bytes in a cold object",
              stream.size());
  WEIR_ASSERT(first <= end, "object range [{}, {}) reversed", first.value(), end.value());
  if (!ranges_.empty() && ranges_.back().stream == stream && ranges_.back().end == first &&
      ranges_.back().data_position + ranges_.back().length == data_size_) {
    // The stream's bytes go on where its last range ended: one range (one extent in the index, not one
    // per record of a JSON stream, whose records are added one at a time).
    ranges_.back().end = end;
    ranges_.back().length += bytes.size();
  } else {
    ranges_.push_back(object_range{std::string(stream), first, end, data_size_, bytes.size()});
    records_.push_back(range_records{});
  }
  range_records& rr = records_.back();
  for (const object_record& r : records) {
    WEIR_ASSERT(r.begin >= first && r.begin < end && r.end > r.begin, "record [{}, {}) outside [{}, {})",
                r.begin.value(), r.end.value(), first.value(), end.value());
    if (rr.unknown) break;
    // Each begins where the one before it ended (the first anywhere in the range). When the records given
    // leave a gap, the range's records are not known: its table is left empty (a fork in its bytes is
    // then refused, as in an object without a table) rather than listing records that may not be there.
    if (rr.count > 0 &&
        r.begin.value() != get_le<std::uint64_t>(table_.data() + table_.size() - object_record_entry_size)) {
      table_.resize(table_.size() - std::size_t{rr.count} * object_record_entry_size);
      rr.count = 0;
      rr.unknown = true;
      break;
    }
    if (rr.count == 0) rr.first_begin = r.begin;
    put_le<std::uint64_t>(table_, r.end.value());
    put_le<std::uint32_t>(table_, r.messages);
    ++rr.count;
  }
  append_data(bytes);
  return ranges_.back();
}

std::uint64_t object_writer::encoded_size() const {
  std::uint64_t footer = 4;
  for (const auto& r : ranges_) footer += min_range_bytes + range_records_bytes + r.stream.size();
  return object_header_size + stored_data_size(data_size_, block_size_) + footer + table_.size() +
         object_trailer_size;
}

object_bytes object_writer::finish() {
  WEIR_ASSERT(!finished_, "object_writer::finish twice");
  finished_ = true;
  const std::uint64_t size = encoded_size();
  object_bytes out = std::move(out_);
  out.reserve(size);
  if (block_fill_ > 0) put_le<std::uint32_t>(out, block_crc_);  // the last, shorter block

  std::size_t footer_at = out.size();
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(ranges_.size()));
  for (const auto& r : ranges_) {
    put_le<std::uint16_t>(out, static_cast<std::uint16_t>(r.stream.size()));
    auto name = std::as_bytes(std::span(r.stream.data(), r.stream.size()));
    out.insert(out.end(), name.begin(), name.end());
    put_le<std::uint64_t>(out, r.first.value());
    put_le<std::uint64_t>(out, r.end.value());
    put_le<std::uint64_t>(out, r.data_position);
    put_le<std::uint64_t>(out, r.length);
  }
  std::size_t entries_at = 0;
  for (const auto& rr : records_) {
    const std::size_t n = std::size_t{rr.count} * object_record_entry_size;
    put_le<std::uint64_t>(out, rr.first_begin.value());
    put_le<std::uint32_t>(out, rr.count);
    put_le<std::uint32_t>(out, storage::crc32c(std::span(table_).subspan(entries_at, n)));
    entries_at += n;
  }
  auto footer = std::span(out).subspan(footer_at);
  std::uint32_t footer_crc = storage::crc32c(footer);
  std::uint32_t footer_length = static_cast<std::uint32_t>(footer.size());
  out.insert(out.end(), table_.begin(), table_.end());

  std::size_t trailer_at = out.size();
  put_le<std::uint64_t>(out, data_size_);
  put_le<std::uint32_t>(out, footer_length);
  put_le<std::uint32_t>(out, footer_crc);
  put_le<std::uint32_t>(out, block_size_);
  put_crc_of(out, trailer_at);
  out.insert(out.end(), reinterpret_cast<const std::byte*>(trailer_magic_v2),
             reinterpret_cast<const std::byte*>(trailer_magic_v2) + 8);
  WEIR_ASSERT(out.size() == size, "object size {} != computed {}", out.size(), size);
  return out;
}

result<std::uint32_t> decode_object_header(std::span<const std::byte> header) {
  if (header.size() < object_header_size)
    return format_error(object_format_errc::truncated, "object header cut short");
  if (std::memcmp(header.data(), header_magic, 8) != 0) {
    return format_error(object_format_errc::bad_magic, "not a weir cold object (header magic)");
  }
  if (get_le<std::uint32_t>(header.data() + 28) != storage::crc32c(header.first(28))) {
    return format_error(object_format_errc::bad_checksum, "object header CRC mismatch");
  }
  auto version = get_le<std::uint16_t>(header.data() + 8);
  if (version != 1 && version != object_format_version) {
    return format_error(object_format_errc::bad_version, fmt::format("object format version {}", version));
  }
  auto block_size = get_le<std::uint32_t>(header.data() + 12);
  if (block_size == 0 || block_size > max_object_block_size) {
    return format_error(object_format_errc::inconsistent, fmt::format("object block size {}", block_size));
  }
  return block_size;
}

result<object_trailer> decode_object_trailer(std::span<const std::byte> tail, std::uint64_t object_size) {
  // An object is at most a few tens of MiB: a size near 2^64 (from a corrupt index) is refused before any
  // sum below could overflow.
  if (object_size > (std::uint64_t{1} << 48)) {
    return format_error(object_format_errc::inconsistent, "object size out of range");
  }
  if (tail.size() != object_trailer_size || object_size < object_header_size + object_trailer_size) {
    return format_error(object_format_errc::truncated, "object too short for a header and a trailer");
  }
  const bool v1 = std::memcmp(tail.data() + 24, trailer_magic, 8) == 0;
  if (!v1 && std::memcmp(tail.data() + 24, trailer_magic_v2, 8) != 0) {
    return format_error(object_format_errc::bad_magic, "not a weir cold object (trailer magic)");
  }
  if (get_le<std::uint32_t>(tail.data() + 20) != storage::crc32c(tail.first(20))) {
    return format_error(object_format_errc::bad_checksum, "object trailer CRC mismatch");
  }
  object_trailer t;
  t.version = v1 ? 1 : 2;
  t.data_length = get_le<std::uint64_t>(tail.data());
  t.footer_length = get_le<std::uint32_t>(tail.data() + 8);
  t.footer_crc = get_le<std::uint32_t>(tail.data() + 12);
  t.block_size = get_le<std::uint32_t>(tail.data() + 16);
  if (t.block_size == 0 || t.block_size > max_object_block_size) {
    return format_error(object_format_errc::inconsistent, fmt::format("object block size {}", t.block_size));
  }
  // Every length must fit in the object: no overflow is possible past this check because each term is
  // at most object_size.
  std::uint64_t room = object_size - object_header_size - object_trailer_size;
  if (t.data_length > room || t.footer_length > room) {
    return format_error(object_format_errc::inconsistent, "object trailer lengths exceed the object");
  }
  std::uint64_t stored = stored_data_size(t.data_length, t.block_size);
  // Version 1 ends with its footer; version 2 has the record table between the footer and the trailer.
  if (stored > room || room - stored < t.footer_length || (v1 && room - stored != t.footer_length)) {
    return format_error(object_format_errc::inconsistent,
                        fmt::format("object of {} bytes cannot hold {} data bytes and a {}-byte footer",
                                    object_size, t.data_length, t.footer_length));
  }
  t.footer_offset = object_header_size + stored;
  t.table_offset = t.footer_offset + t.footer_length;
  t.table_length = room - stored - t.footer_length;
  if (t.table_length % object_record_entry_size != 0) {
    return format_error(
        object_format_errc::inconsistent,
        fmt::format("object of {} bytes leaves {} bytes for its record table", object_size, t.table_length));
  }
  return t;
}

result<object_footer> decode_object_footer(std::span<const std::byte> footer, const object_trailer& trailer) {
  if (footer.size() != trailer.footer_length) {
    return format_error(object_format_errc::truncated, "object footer cut short");
  }
  if (storage::crc32c(footer) != trailer.footer_crc) {
    return format_error(object_format_errc::bad_checksum, "object footer CRC mismatch");
  }
  byte_cursor cur{footer};
  auto count = cur.take<std::uint32_t>();
  // Each range takes at least min_range_bytes: a count that cannot fit is rejected before reserving.
  if (!cur.ok || count > (footer.size() - 4) / min_range_bytes) {
    return format_error(object_format_errc::inconsistent, "object footer range count exceeds its length");
  }
  object_footer out;
  out.trailer = trailer;
  out.ranges.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    object_range r;
    auto name_len = cur.take<std::uint16_t>();
    if (name_len > max_stream_name_bytes) {
      return format_error(object_format_errc::inconsistent, "object footer stream name too long");
    }
    r.stream = cur.take_string(name_len);
    r.first = streams::stream_offset{cur.take<std::uint64_t>()};
    r.end = streams::stream_offset{cur.take<std::uint64_t>()};
    r.data_position = cur.take<std::uint64_t>();
    r.length = cur.take<std::uint64_t>();
    if (!cur.ok) return format_error(object_format_errc::truncated, "object footer range cut short");
    if (r.first > r.end || r.data_position > trailer.data_length ||
        r.length > trailer.data_length - r.data_position) {
      return format_error(
          object_format_errc::inconsistent,
          fmt::format("object footer range {} [{}, {}) at {}+{} outside the data region of {}", i,
                      r.first.value(), r.end.value(), r.data_position, r.length, trailer.data_length));
    }
    out.ranges.push_back(std::move(r));
  }
  if (trailer.version >= 2) {
    if (count > (footer.size() - cur.pos) / range_records_bytes) {
      return format_error(object_format_errc::truncated, "object footer record counts cut short");
    }
    out.records.reserve(count);
    std::uint64_t position = 0;
    for (std::uint32_t i = 0; i < count; ++i) {
      range_records rr;
      rr.first_begin = streams::stream_offset{cur.take<std::uint64_t>()};
      rr.count = cur.take<std::uint32_t>();
      rr.crc = cur.take<std::uint32_t>();
      rr.table_position = position;
      const object_range& r = out.ranges[i];
      if (rr.count > 0 && (rr.first_begin < r.first || rr.first_begin >= r.end)) {
        return format_error(object_format_errc::inconsistent,
                            fmt::format("object footer range {}: first record at {} outside [{}, {})", i,
                                        rr.first_begin.value(), r.first.value(), r.end.value()));
      }
      // Each record begins at a distinct offset of the range.
      if (rr.count > r.end.value() - r.first.value()) {
        return format_error(object_format_errc::inconsistent,
                            fmt::format("object footer range {}: {} records in {} bytes", i, rr.count,
                                        r.end.value() - r.first.value()));
      }
      position += std::uint64_t{rr.count} * object_record_entry_size;
      out.records.push_back(rr);
    }
    if (position != trailer.table_length) {
      return format_error(
          object_format_errc::inconsistent,
          fmt::format("object record table of {} bytes, its ranges list {}", trailer.table_length, position));
    }
  }
  if (cur.pos != footer.size()) {
    return format_error(object_format_errc::inconsistent, "object footer has bytes after its ranges");
  }
  return out;
}

block_span blocks_covering(const object_trailer& t, std::uint64_t data_position, std::uint64_t length) {
  WEIR_ASSERT(length > 0 && data_position <= t.data_length && length <= t.data_length - data_position,
              "block range {}+{} outside data of {}", data_position, length, t.data_length);
  block_span s;
  const std::uint64_t stored_block = std::uint64_t{t.block_size} + 4;
  s.first_block = data_position / t.block_size;
  std::uint64_t last_block = (data_position + length - 1) / t.block_size;
  s.block_count = last_block - s.first_block + 1;
  s.object_offset = object_header_size + s.first_block * stored_block;
  std::uint64_t last_data_end = std::min<std::uint64_t>((last_block + 1) * t.block_size, t.data_length);
  std::uint64_t last_block_bytes = last_data_end - last_block * t.block_size;
  s.object_length = (s.block_count - 1) * stored_block + last_block_bytes + 4;
  return s;
}

result<object_bytes> extract_from_blocks(const object_trailer& t, const block_span& span,
                                         std::span<const std::byte> stored, std::uint64_t data_position,
                                         std::uint64_t length) {
  if (stored.size() != span.object_length) {
    return format_error(object_format_errc::truncated,
                        fmt::format("read {} of {} stored block bytes", stored.size(), span.object_length));
  }
  object_bytes out;
  out.reserve(length);
  std::uint64_t at = 0;  // in `stored`
  for (std::uint64_t b = span.first_block; b < span.first_block + span.block_count; ++b) {
    std::uint64_t block_start = b * t.block_size;
    std::uint64_t n = std::min<std::uint64_t>(t.block_size, t.data_length - block_start);
    auto data = stored.subspan(at, n);
    auto crc = get_le<std::uint32_t>(stored.data() + at + n);
    if (storage::crc32c(data) != crc) {
      return format_error(object_format_errc::bad_checksum, fmt::format("block {} CRC mismatch", b));
    }
    std::uint64_t from = std::max(block_start, data_position);
    std::uint64_t to = std::min(block_start + n, data_position + length);
    out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(from - block_start),
               data.begin() + static_cast<std::ptrdiff_t>(to - block_start));
    at += n + 4;
  }
  return out;
}

result<std::vector<object_record>> decode_range_records(std::span<const std::byte> entries,
                                                        const object_footer& footer, std::size_t range) {
  WEIR_ASSERT(range < footer.records.size(), "range {} of {} with records", range, footer.records.size());
  const range_records& rr = footer.records[range];
  const object_range& r = footer.ranges[range];
  if (entries.size() != std::size_t{rr.count} * object_record_entry_size) {
    return format_error(object_format_errc::truncated, "object record entries cut short");
  }
  if (storage::crc32c(entries) != rr.crc) {
    return format_error(object_format_errc::bad_checksum,
                        fmt::format("range {} record table CRC mismatch", range));
  }
  std::vector<object_record> out;
  out.reserve(rr.count);
  streams::stream_offset begin = rr.first_begin;
  for (std::uint32_t i = 0; i < rr.count; ++i) {
    const std::byte* e = entries.data() + std::size_t{i} * object_record_entry_size;
    object_record rec{begin, streams::stream_offset{get_le<std::uint64_t>(e)}, get_le<std::uint32_t>(e + 8)};
    // Every record begins inside the range, after the one before it.
    if (rec.end <= rec.begin || rec.begin >= r.end) {
      return format_error(object_format_errc::inconsistent,
                          fmt::format("range {} record {}: [{}, {}) outside the range [{}, {})", range, i,
                                      rec.begin.value(), rec.end.value(), r.first.value(), r.end.value()));
    }
    begin = rec.end;
    out.push_back(rec);
  }
  return out;
}

store_result<std::vector<object_record>> read_range_records(object_store& store, const std::string& key,
                                                            const object_footer& footer, std::size_t range) {
  if (footer.trailer.version < 2) {
    return make_store_error(store_errc::invalid, key + ": format version 1 has no record table", 0,
                            "NoRecordTable");
  }
  if (range >= footer.records.size()) {
    return make_store_error(store_errc::invalid, fmt::format("{}: no range {}", key, range));
  }
  const range_records& rr = footer.records[range];
  if (rr.count == 0) return std::vector<object_record>{};
  const std::uint64_t length = std::uint64_t{rr.count} * object_record_entry_size;
  auto got = store.get_range(key, footer.trailer.table_offset + rr.table_position, length);
  if (!got) return std::move(got.err());
  if (got->bytes.size() != length) {
    return make_store_error(
        store_errc::connection,
        fmt::format("short read of a record table: {} of {} bytes", got->bytes.size(), length));
  }
  auto records = decode_range_records(got->bytes, footer, range);
  if (!records) return format_store_error(records.err());
  return std::move(*records);
}

store_error format_store_error(const weir::error& e) {
  // Every error reaching here is the format's own (format_error): compare the code directly.
  bool corrupt = e.code == static_cast<int>(object_format_errc::bad_checksum);
  return make_store_error(store_errc::other, e.reason, 0, corrupt ? "Corrupt" : "BadObject");
}

store_result<object_reader> object_reader::open(object_store& store, std::string key,
                                                std::uint64_t object_size) {
  if (object_size < object_header_size + object_trailer_size) {
    return make_store_error(store_errc::other, "object too short for a header and a trailer", 0, "BadObject");
  }
  std::uint64_t tail_len = std::min(object_size, tail_read_bytes);
  auto tail = store.get_range(key, object_size - tail_len, tail_len);
  if (!tail) return std::move(tail.err());
  const object_bytes& tb = tail->bytes;
  if (tb.size() != tail_len) {
    return make_store_error(
        store_errc::connection,
        fmt::format("short read of the object tail: {} of {} bytes", tb.size(), tail_len));
  }
  auto trailer = decode_object_trailer(std::span(tb).last(object_trailer_size), object_size);
  if (!trailer) return format_store_error(trailer.err());
  object_bytes footer_bytes;
  if (trailer->footer_offset >= object_size - tail_len) {
    auto from = static_cast<std::ptrdiff_t>(trailer->footer_offset - (object_size - tail_len));
    footer_bytes.assign(tb.begin() + from, tb.begin() + from + trailer->footer_length);
  } else {
    auto got = store.get_range(key, trailer->footer_offset, trailer->footer_length);
    if (!got) return std::move(got.err());
    footer_bytes = std::move(got->bytes);
  }
  auto footer = decode_object_footer(footer_bytes, *trailer);
  if (!footer) return format_store_error(footer.err());
  return object_reader(store, std::move(key), std::move(*footer));
}

store_result<object_bytes> object_reader::read(std::uint64_t data_position, std::uint64_t length) {
  const object_trailer& t = footer_.trailer;
  if (length == 0) return object_bytes{};
  if (data_position > t.data_length || length > t.data_length - data_position) {
    return make_store_error(store_errc::invalid, fmt::format("read {}+{} past the data region of {}",
                                                             data_position, length, t.data_length));
  }
  block_span span = blocks_covering(t, data_position, length);
  auto got = store_->get_range(key_, span.object_offset, span.object_length);
  if (!got) return std::move(got.err());
  if (got->bytes.size() != span.object_length) {
    return make_store_error(store_errc::connection, fmt::format("short read of object blocks: {} of {} bytes",
                                                                got->bytes.size(), span.object_length));
  }
  auto data = extract_from_blocks(t, span, got->bytes, data_position, length);
  if (!data) return format_store_error(data.err());
  return std::move(*data);
}

}  // namespace weir::tier
