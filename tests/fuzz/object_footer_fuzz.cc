// libFuzzer target: the decoders of bytes weir reads back from an object store, on arbitrary bytes:
// the cold object's header, trailer and footer and its CRC-checked block reads (tier/object_format.h),
// object keys met in a listing (tier/object_key.h), and S3's ListObjectsV2 and <Error> replies
// (tier/s3_xml.h). Invariants:
//   - nothing crashes, and no decoder allocates more than its input justifies;
//   - a decoded footer's ranges lie inside the data region, and the data region, footer and record
//     table inside the object; a range's decoded records begin inside it;
//   - reading any decoded range through blocks_covering/extract_from_blocks either fails (a CRC) or
//     returns exactly the range's length;
//   - a parsed object key (object, restore snapshot, snapshot part) formats back to the same string;
//   - a restore snapshot head that decodes with parts joins only if every part matches its table; the
//     input cut into parts joins back to the one object it would be;
//   - a decoded cold index encodes to bytes that decode to the same index, and a decoded index record
//     encodes back to the same bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>

#include "tier/cold_index.h"
#include "tier/object_format.h"
#include "tier/object_key.h"
#include "tier/restore_snapshot.h"
#include "tier/s3_xml.h"

namespace {

using namespace weir::tier;

#define FUZZ_CHECK(cond)                                                         \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "invariant broken: %s (line %d)\n", #cond, __LINE__); \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

void check_object(std::span<const std::byte> obj) {
  (void)decode_object_header(obj);
  if (obj.size() < object_trailer_size) return;
  auto t = decode_object_trailer(obj.last(object_trailer_size), obj.size());
  if (!t) return;
  FUZZ_CHECK(t->footer_offset + t->footer_length + t->table_length + object_trailer_size == obj.size());
  FUZZ_CHECK(t->table_offset == t->footer_offset + t->footer_length);
  FUZZ_CHECK(object_header_size + stored_data_size(t->data_length, t->block_size) == t->footer_offset);
  auto f = decode_object_footer(obj.subspan(t->footer_offset, t->footer_length), *t);
  if (!f) return;
  for (const auto& r : f->ranges) {
    FUZZ_CHECK(r.first <= r.end);
    FUZZ_CHECK(r.data_position <= t->data_length && r.length <= t->data_length - r.data_position);
    if (r.length == 0) continue;
    block_span s = blocks_covering(*t, r.data_position, r.length);
    FUZZ_CHECK(s.object_offset + s.object_length <= t->footer_offset);
    auto got =
        extract_from_blocks(*t, s, obj.subspan(s.object_offset, s.object_length), r.data_position, r.length);
    if (got) FUZZ_CHECK(got->size() == r.length);
  }
  // Version 2: each range's record table entries lie inside the table, and decoded records begin inside
  // their range, each after the one before it.
  FUZZ_CHECK(f->records.empty() || f->records.size() == f->ranges.size());
  for (std::size_t i = 0; i < f->records.size(); ++i) {
    const range_records& rr = f->records[i];
    const std::uint64_t n = std::uint64_t{rr.count} * object_record_entry_size;
    FUZZ_CHECK(rr.table_position + n <= t->table_length);
    auto records = decode_range_records(obj.subspan(t->table_offset + rr.table_position, n), *f, i);
    if (!records) continue;
    FUZZ_CHECK(records->size() == rr.count);
    for (const auto& rec : *records) {
      FUZZ_CHECK(rec.begin >= f->ranges[i].first && rec.begin < f->ranges[i].end && rec.end > rec.begin);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto bytes = std::as_bytes(std::span(data, size));
  check_object(bytes);
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto name = parse_object_key(text)) FUZZ_CHECK(object_key(*name) == text);
  if (auto name = parse_snapshot_key(text)) FUZZ_CHECK(snapshot_key(*name) == text);
  if (auto part = parse_snapshot_part_key(text))
    FUZZ_CHECK(snapshot_part_key(part->snapshot, part->part) == text);
  if (auto v = decode_restore_snapshot(bytes)) {
    // A head's parts, here all empty: it joins only if its table says so.
    bool all_empty = true;
    for (const auto& p : v->parts) all_empty = all_empty && p.size == 0 && p.crc == 0;  // crc32c("") is 0
    auto joined =
        join_restore_snapshot(object_bytes(bytes.begin(), bytes.end()),
                              [](std::uint32_t) -> weir::result<object_bytes> { return object_bytes{}; });
    FUZZ_CHECK(v->parts.empty() || bool(joined) == all_empty);
  }
  {
    // The input as a state, in objects of 49..304 bytes.
    const restore_snapshot_header h{cold_epoch{1}, cold_group{0}, 1, size, 0};
    const std::uint64_t max_object = restore_snapshot_header_size + 1 + (size == 0 ? 0 : data[0]);
    const auto objects = encode_restore_snapshot_objects(h, bytes, max_object);
    for (const auto& part : objects.parts) FUZZ_CHECK(part.size() <= max_object);
    auto joined = join_restore_snapshot(objects.head, [&](std::uint32_t i) -> weir::result<object_bytes> {
      FUZZ_CHECK(i < objects.parts.size());
      return objects.parts[i];
    });
    const object_bytes whole = encode_restore_snapshot(h, bytes);
    FUZZ_CHECK(joined && *joined == whole);
  }
  if (auto page = parse_list_objects_v2(text)) FUZZ_CHECK(!page->truncated || !page->next_token.empty());
  (void)parse_s3_error(text);
  if (auto rec = decode_index_record(bytes)) {
    const auto again = encode_index_record(*rec);
    FUZZ_CHECK(again.size() == bytes.size() && std::equal(again.begin(), again.end(), bytes.begin()));
  }
  if (auto ix = cold_index::decode(bytes)) {
    auto again = cold_index::decode(ix->encode());
    FUZZ_CHECK(again && *again == *ix);
  }
  return 0;
}
