#include "tier/cold_index.h"

#include <algorithm>

#include "raft/byte_codec.h"

namespace weir::tier {
namespace {

constexpr std::uint32_t index_magic = 0x58444943;  // "CIDX"
constexpr std::uint16_t index_version = 1;
constexpr std::size_t max_key_bytes = 1024;

error bad_index(std::string what) {
  return make_error(std::errc::invalid_argument, "cold index: " + what);
}

}  // namespace

std::uint32_t cold_index::add_slot(cold_object_ref ref) {
  ++keys_[ref.key];
  object_slot slot{std::move(ref), 0};
  if (!free_slots_.empty()) {
    const std::uint32_t i = free_slots_.back();
    free_slots_.pop_back();
    objects_[i] = std::move(slot);
    return i;
  }
  objects_.push_back(std::move(slot));
  return static_cast<std::uint32_t>(objects_.size() - 1);
}

cold_apply_result cold_index::apply(const uploaded_object& u, const span_fn& span_of) {
  cold_apply_result out;
  std::optional<std::uint32_t> slot;
  for (const object_range& r : u.ranges) {
    const auto span = span_of(r.stream);
    auto it = streams_.find(r.stream);
    const bool has = it != streams_.end() && !it->second.empty();
    const streams::stream_offset expected = has ? it->second.back().end : (span ? span->base : r.first);
    if (!span || r.end <= expected) {
      ++out.skipped;  // the stream is gone, or these bytes are cold already (a late or repeated record)
      continue;
    }
    if (r.first != expected || r.end > span->tail || r.end.value() - r.first.value() != r.length) {
      ++out.refused;
      continue;
    }
    if (!slot) slot = add_object(u);
    if (it == streams_.end()) it = streams_.emplace(r.stream, std::vector<cold_extent>{}).first;
    it->second.push_back(cold_extent{r.first, r.end, *slot, r.data_position});
    ++objects_[*slot].extents;
    ++extents_;
    ++out.applied;
  }
  if (slot) {
    ++live_objects_;
    out.recorded = true;
  }
  return out;
}

std::optional<streams::stream_offset> cold_index::cold_end(std::string_view stream) const {
  auto it = streams_.find(stream);
  if (it == streams_.end() || it->second.empty()) return std::nullopt;
  return it->second.back().end;
}

std::optional<cold_index::location> cold_index::find(std::string_view stream,
                                                     streams::stream_offset at) const {
  auto it = streams_.find(stream);
  if (it == streams_.end()) return std::nullopt;
  const auto& ext = it->second;
  // The last extent starting at or before `at`.
  auto e = std::upper_bound(ext.begin(), ext.end(), at,
                            [](streams::stream_offset v, const cold_extent& x) { return v < x.first; });
  if (e == ext.begin()) return std::nullopt;
  --e;
  if (at >= e->end) return std::nullopt;
  return location{&*e, &objects_[e->object].ref};
}

std::vector<cold_object_ref> cold_index::drop_stream(std::string_view stream) {
  std::vector<cold_object_ref> freed;
  auto it = streams_.find(stream);
  if (it == streams_.end()) return freed;
  for (const cold_extent& e : it->second) {
    object_slot& o = objects_[e.object];
    --extents_;
    if (--o.extents == 0) {
      if (auto k = keys_.find(o.ref.key); k != keys_.end() && --k->second == 0) keys_.erase(k);
      freed.push_back(std::move(o.ref));
      o.ref = {};
      free_slots_.push_back(e.object);
      --live_objects_;
    }
  }
  streams_.erase(it);
  return freed;
}

void cold_index::copy_extents(const std::string& stream, const std::vector<cold_extent>& extents,
                              const cold_index& from,
                              std::unordered_map<std::uint32_t, std::uint32_t>& slots) {
  if (extents.empty()) return;
  std::vector<cold_extent>& to = streams_[stream];
  for (cold_extent e : extents) {
    auto [s, fresh] = slots.try_emplace(e.object, 0);
    if (fresh) {
      s->second = add_slot(from.objects_[e.object].ref);
      ++live_objects_;
    }
    e.object = s->second;
    ++objects_[e.object].extents;
    ++extents_;
    to.push_back(e);
  }
}

cold_index cold_index::part(const stream_predicate& in_part) const {
  cold_index out;
  std::unordered_map<std::uint32_t, std::uint32_t> slots;
  // In name order, so that equal parts encode equally (copy_extents numbers slots as it meets them).
  std::vector<const std::string*> names;
  for (const auto& [name, ext] : streams_) {
    if (in_part(name)) names.push_back(&name);
  }
  std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  for (const std::string* name : names) out.copy_extents(*name, streams_.at(*name), *this, slots);
  return out;
}

void cold_index::replace_part(const stream_predicate& in_part, const cold_index& part) {
  std::vector<std::string> mine;
  for (const auto& [name, ext] : streams_) {
    if (in_part(name)) mine.push_back(name);
  }
  for (const std::string& name : mine) (void)drop_stream(name);
  std::unordered_map<std::uint32_t, std::uint32_t> slots;
  for (const auto& [name, ext] : part.streams_) {
    if (in_part(name)) copy_extents(name, ext, part, slots);
  }
}

std::vector<std::byte> cold_index::encode() const {
  // u32 magic, u16 version, u32 object slots, per slot: u16 key length, key, u64 size, u32 extents (0:
  // free); u32 streams, per stream: u16 name length, name, u32 extents, per extent: u64 first, u64 end,
  // u32 object, u64 data position. Streams in name order, so that equal indexes encode equally.
  std::vector<std::byte> out;
  raft::byte_writer w(out);
  w.u32(index_magic);
  w.u16(index_version);
  w.u32(static_cast<std::uint32_t>(objects_.size()));
  for (const object_slot& o : objects_) {
    w.u16(static_cast<std::uint16_t>(o.ref.key.size()));
    w.text(o.ref.key);
    w.u64(o.ref.size);
    w.u32(o.extents);
  }
  std::vector<const std::string*> names;
  names.reserve(streams_.size());
  for (const auto& [name, ext] : streams_) names.push_back(&name);
  std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  w.u32(static_cast<std::uint32_t>(names.size()));
  for (const std::string* name : names) {
    const auto& ext = streams_.at(*name);
    w.u16(static_cast<std::uint16_t>(name->size()));
    w.text(*name);
    w.u32(static_cast<std::uint32_t>(ext.size()));
    for (const cold_extent& e : ext) {
      w.u64(e.first.value());
      w.u64(e.end.value());
      w.u32(e.object);
      w.u64(e.data_position);
    }
  }
  return out;
}

result<cold_index> cold_index::decode(std::span<const std::byte> bytes) {
  raft::byte_reader r(bytes);
  std::uint32_t magic = 0, slots = 0, stream_count = 0;
  std::uint16_t version = 0;
  if (!r.u32(magic) || magic != index_magic) return bad_index("bad magic");
  if (!r.u16(version) || version != index_version) return bad_index("unknown version");
  if (!r.u32(slots) || slots > r.remaining() / 14) return bad_index("object count past the end");
  cold_index ix;
  ix.objects_.resize(slots);
  for (std::uint32_t i = 0; i < slots; ++i) {
    std::uint16_t len = 0;
    std::span<const std::byte> key;
    object_slot& o = ix.objects_[i];
    if (!r.u16(len) || len > max_key_bytes || !r.bytes(len, key) || !r.u64(o.ref.size) || !r.u32(o.extents)) {
      return bad_index("truncated object table");
    }
    o.ref.key.assign(reinterpret_cast<const char*>(key.data()), key.size());
    if (o.extents == 0) {
      if (!o.ref.key.empty()) return bad_index("a free slot with a key");
      ix.free_slots_.push_back(i);
    } else {
      if (o.ref.key.empty()) return bad_index("an object without a key");
      ++ix.live_objects_;
      ++ix.keys_[o.ref.key];
    }
  }
  std::reverse(ix.free_slots_.begin(), ix.free_slots_.end());
  std::vector<std::uint32_t> counted(slots, 0);
  if (!r.u32(stream_count) || stream_count > r.remaining() / 6) return bad_index("stream count past the end");
  for (std::uint32_t s = 0; s < stream_count; ++s) {
    std::uint16_t len = 0;
    std::span<const std::byte> name;
    std::uint32_t n = 0;
    if (!r.u16(len) || !r.bytes(len, name) || !r.u32(n) || n > r.remaining() / 28) {
      return bad_index("truncated stream");
    }
    std::string key(reinterpret_cast<const char*>(name.data()), name.size());
    if (n == 0 || ix.streams_.count(key) != 0) return bad_index("an empty or repeated stream");
    std::vector<cold_extent> ext(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      std::uint64_t first = 0, end = 0;
      cold_extent& e = ext[i];
      if (!r.u64(first) || !r.u64(end) || !r.u32(e.object) || !r.u64(e.data_position)) {
        return bad_index("truncated extent");
      }
      e.first = streams::stream_offset(first);
      e.end = streams::stream_offset(end);
      if (first >= end || (i > 0 && ext[i - 1].end != e.first)) return bad_index("extents out of order");
      if (e.object >= slots || ix.objects_[e.object].extents == 0) return bad_index("an extent of no object");
      ++counted[e.object];
    }
    ix.extents_ += n;
    ix.streams_.emplace(std::move(key), std::move(ext));
  }
  for (std::uint32_t i = 0; i < slots; ++i) {
    if (counted[i] != ix.objects_[i].extents) return bad_index("object extent counts do not add up");
  }
  if (r.remaining() != 0) return bad_index("bytes after the end");
  return ix;
}

bool cold_index::operator==(const cold_index& o) const {
  return encode() == o.encode();
}

namespace {
constexpr std::uint32_t record_magic = 0x52444943;  // "CIDR"
constexpr std::uint16_t record_version = 1;
}  // namespace

std::vector<std::byte> encode_index_record(const uploaded_object& u) {
  // u32 magic, u16 version, u16 epoch, u32 group, u64 term, u64 seq, u64 size, u32 ranges, per range:
  // u16 name length, name, u64 first, u64 end, u64 data position, u64 length. The key is the name's.
  std::vector<std::byte> out;
  raft::byte_writer w(out);
  w.u32(record_magic);
  w.u16(record_version);
  w.u16(u.name.epoch.value());
  w.u32(u.name.group.value());
  w.u64(u.name.term.value());
  w.u64(u.name.seq.value());
  w.u64(u.size);
  w.u32(static_cast<std::uint32_t>(u.ranges.size()));
  for (const object_range& r : u.ranges) {
    w.u16(static_cast<std::uint16_t>(r.stream.size()));
    w.text(r.stream);
    w.u64(r.first.value());
    w.u64(r.end.value());
    w.u64(r.data_position);
    w.u64(r.length);
  }
  return out;
}

result<uploaded_object> decode_index_record(std::span<const std::byte> bytes) {
  raft::byte_reader r(bytes);
  std::uint32_t magic = 0, group = 0, count = 0;
  std::uint16_t version = 0, epoch = 0;
  std::uint64_t term = 0, seq = 0;
  uploaded_object u;
  if (!r.u32(magic) || magic != record_magic) return bad_index("bad record magic");
  if (!r.u16(version) || version != record_version) return bad_index("unknown record version");
  if (!r.u16(epoch) || !r.u32(group) || !r.u64(term) || !r.u64(seq) || !r.u64(u.size) || !r.u32(count)) {
    return bad_index("truncated record");
  }
  if (count > r.remaining() / 35) return bad_index("range count past the end");
  u.name = object_name{cold_epoch(epoch), cold_group(group), leader_term(term), upload_seq(seq)};
  u.key = object_key(u.name);
  std::uint64_t data_end = 0;
  u.ranges.resize(count);
  for (object_range& o : u.ranges) {
    std::uint16_t len = 0;
    std::span<const std::byte> name;
    std::uint64_t first = 0, end = 0;
    if (!r.u16(len) || len == 0 || len > max_stream_name_bytes || !r.bytes(len, name) || !r.u64(first) ||
        !r.u64(end) || !r.u64(o.data_position) || !r.u64(o.length)) {
      return bad_index("truncated range");
    }
    o.stream.assign(reinterpret_cast<const char*>(name.data()), name.size());
    o.first = streams::stream_offset(first);
    o.end = streams::stream_offset(end);
    if (first > end || end - first != o.length || o.data_position < data_end ||
        o.length > u.size - std::min(u.size, o.data_position)) {
      return bad_index("a range out of order or outside the object");
    }
    data_end = o.data_position + o.length;
  }
  if (r.remaining() != 0) return bad_index("bytes after the record");
  return u;
}

void cold_index::for_each_cold_end(
    const std::function<void(std::string_view, streams::stream_offset)>& fn) const {
  for (const auto& [stream, extents] : streams_) {
    if (!extents.empty()) fn(stream, extents.back().end);
  }
}

std::vector<std::string> cold_index::object_keys() const {
  std::vector<std::string> out;
  out.reserve(keys_.size());
  for (const auto& [key, slots] : keys_) out.push_back(key);
  return out;
}

}  // namespace weir::tier
