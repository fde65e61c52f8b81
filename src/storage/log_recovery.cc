#include "storage/log_recovery.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "base/log.h"
#include "storage/log_format.h"
#include "storage/segment_spares.h"

namespace weir::storage {

namespace {

error corruption(const std::string& path, std::uint64_t offset, const std::string& why) {
  return make_error(errc::corruption, fmt::format("{} at byte {}: {}", path, offset, why));
}

// A complete record with a good CRC at `off`; nullopt otherwise.
std::optional<format::record_header> valid_record_at(std::span<const std::byte> bytes, std::uint64_t off) {
  if (off + format::record_header_size > bytes.size()) return std::nullopt;
  auto h = format::decode_record_header(bytes.subspan(off, format::record_header_size));
  if (!h) return std::nullopt;
  std::uint64_t end = off + format::record_header_size + h->length;
  if (end > bytes.size()) return std::nullopt;
  if (!format::record_crc_ok(bytes.subspan(off, end - off))) return std::nullopt;
  return h;
}

// Is there a valid record (with an lsn not older than `next`) anywhere after `from`? If so the damage at
// `from` is not a torn tail: bytes after it were written, and maybe synced and acknowledged.
std::optional<std::uint64_t> valid_record_after(std::span<const std::byte> bytes, std::uint64_t from,
                                                lsn next) {
  // A valid record's header holds a non-zero lsn, so none starts at or after the last non-zero byte: a
  // prepared segment's zeros (log_writer, prepare_segments) need no scan.
  const std::uint64_t end = nonzero_end(bytes);
  for (std::uint64_t off = from + 1; off < end && off + format::record_header_size <= bytes.size(); ++off) {
    auto h = valid_record_at(bytes, off);
    if (h && h->seq >= next) return off;
  }
  return std::nullopt;
}

status truncate_file(env& e, const std::string& path, std::uint64_t size) {
  auto file = e.open_writable(path, open_mode::open_existing);
  if (!file) return file.err();
  if (auto st = (*file)->truncate(size); !st) return st;
  return (*file)->sync();
}

// What the first 40 bytes of a segment say, read without reading the rest of the file.
struct header_probe {
  std::string path;
  std::optional<format::segment_header> header;  // nullopt: bad magic, version, CRC or id
  std::string bad;                               // why, when header is nullopt
  std::uint64_t size = 0;                        // file size
};

result<header_probe> probe_header(env& e, const std::string& dir, segment_id id) {
  header_probe out;
  out.path = join_path(dir, format::segment_file_name(id));
  auto file = e.open_readable(out.path);
  if (!file) return file.err();
  auto size = (*file)->size();
  if (!size) return size.err();
  out.size = *size;
  std::array<std::byte, format::segment_header_size> buf{};
  auto n = (*file)->read(0, buf);
  if (!n) return n.err();
  auto h = *n == buf.size() ? format::decode_segment_header(buf) : std::nullopt;
  if (!h) {
    out.bad = "bad segment header (magic, version or CRC)";
  } else if (h->id != id) {
    out.bad = fmt::format("header names segment {}", h->id.value());
  } else {
    out.header = h;
  }
  return out;
}

// With a checkpoint covering lsn `covered`: the leading segments it wholly covers are not read, only
// their headers checked. Segment i is wholly covered when segment i+1's base lsn is <= covered + 1; the
// last segment never is (nothing follows to bound it). Gaps in the ids are allowed here: reclaim removes
// covered segments in any order and keeps those still referenced. Appends those segments to `out` (with
// last = next base - 1 and size = file size) and returns the index of the first segment to scan.
result<std::size_t> skip_covered_segments(env& e, const std::string& dir, const std::vector<segment_id>& ids,
                                          lsn covered, std::vector<segment_info>& out) {
  if (ids.size() < 2) return std::size_t{0};
  auto cur = probe_header(e, dir, ids[0]);
  if (!cur) return cur.err();
  if (!cur->header) return corruption(cur->path, 0, cur->bad);
  for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
    auto next = probe_header(e, dir, ids[i + 1]);
    if (!next) return next.err();
    if (!next->header) {
      // The last segment's header may be torn (a roll cut by a crash): the full scan decides, from i on.
      if (i + 2 == ids.size()) return i;
      return corruption(next->path, 0, next->bad);
    }
    const lsn base = cur->header->base, next_base = next->header->base;
    if (next_base < base) {
      return corruption(next->path, 24,
                        fmt::format("segment starts at lsn {}, before the base {} of segment {}",
                                    next_base.value(), base.value(), ids[i].value()));
    }
    if (next_base.value() > covered.value() + 1) return i;
    out.push_back(segment_info{ids[i], base, lsn{next_base.value() - 1}, cur->size});
    cur = std::move(next);
  }
  return ids.size() - 1;
}

}  // namespace

result<recovered_log> recover_log(env& e, const std::string& dir, const record_visitor& visit,
                                  const checkpoint_visitor& restore) {
  if (auto st = e.create_dirs(dir); !st) return st.err();
  recovered_log out;

  auto ckpt = checkpoint_store(e, dir).load_latest();
  if (!ckpt) return ckpt.err();
  out.latest_checkpoint = std::move(*ckpt);
  const lsn covered = out.latest_checkpoint ? out.latest_checkpoint->covered : lsn{0};
  if (out.latest_checkpoint && restore) {
    if (auto st = restore(*out.latest_checkpoint); !st) return st.err();
  }

  auto names = e.list_dir(dir);
  if (!names) return names.err();
  std::vector<segment_id> ids;
  std::optional<lsn> skipped_checkpoint;  // the newest checkpoint file load_latest found damaged
  for (const auto& name : *names) {
    if (auto id = format::parse_segment_file_name(name)) ids.push_back(*id);
    if (auto l = format::parse_checkpoint_file_name(name); l && *l > covered) {
      skipped_checkpoint = std::max(skipped_checkpoint.value_or(*l), *l);
    }
  }
  std::sort(ids.begin(), ids.end());
  // Records missing from the log are worth one more sentence when a damaged checkpoint explains them: the
  // segments it made redundant were reclaimed, and the checkpoint that held their content is unreadable.
  auto missing = [&](std::string what) {
    if (skipped_checkpoint) {
      what += fmt::format(
          " (checkpoint {} is damaged and was skipped: the records it covered were reclaimed from the log)",
          join_path(dir, format::checkpoint_file_name(*skipped_checkpoint)));
    }
    return make_error(errc::corruption, what);
  };

  // Without a checkpoint every segment is scanned; with one, those it wholly covers are only probed.
  std::size_t first = 0;
  if (out.latest_checkpoint) {
    auto f = skip_covered_segments(e, dir, ids, covered, out.segments);
    if (!f) return f.err();
    first = *f;
  }
  // From the first scanned segment on the ids must be contiguous: reclaim never removes those.
  for (std::size_t i = first + 1; i < ids.size(); ++i) {
    if (ids[i].value() != ids[i - 1].value() + 1) {
      return missing(fmt::format("{}: segment {} is missing (have {} and {})", dir, ids[i - 1].value() + 1,
                                 ids[i - 1].value(), ids[i].value()));
    }
  }

  std::optional<lsn> expected;  // lsn the next record must carry
  for (std::size_t i = first; i < ids.size(); ++i) {
    const bool last = i + 1 == ids.size();
    const std::string path = join_path(dir, format::segment_file_name(ids[i]));
    auto bytes_r = read_whole_file(e, path);
    if (!bytes_r) return bytes_r.err();
    std::span<const std::byte> bytes(*bytes_r);

    auto hdr = format::decode_segment_header(bytes);
    if (!hdr || hdr->id != ids[i]) {
      // The writer syncs a new segment's header before writing any record into it, so a torn header on the
      // last segment means the roll itself was cut short: nothing in it was ever acknowledged.
      if (last && !hdr && !valid_record_after(bytes, 0, lsn{0})) {
        const std::uint64_t written = written_end(bytes, 0);
        log::warn(
            "storage: removing {} ({} bytes, {} of them not zero): its header is incomplete (a segment "
            "roll cut by a crash)",
            path, bytes.size(), written);
        if (auto st = e.remove_file(path); !st) return st.err();
        if (auto st = e.sync_dir(dir); !st) return st.err();
        out.truncated_bytes += written;
        out.prepared_bytes += bytes.size() - written;
        out.next_segment = ids[i];
        break;
      }
      return corruption(path, 0,
                        hdr ? fmt::format("header names segment {}", hdr->id.value())
                            : "bad segment header (magic, version or CRC)");
    }
    // A base beyond `expected` is fine only when the checkpoint covers the gap (see start_new_segment).
    const bool gap_covered = expected && hdr->base > *expected && hdr->base.value() <= covered.value() + 1;
    if (expected && hdr->base != *expected && !gap_covered) {
      return missing(fmt::format("{} at byte 24: segment starts at lsn {}, expected {}", path,
                                 hdr->base.value(), expected->value()));
    }
    if (!expected && hdr->base.value() > covered.value() + 1) {
      return missing(fmt::format(
          "{} at byte 24: log starts at lsn {} but the checkpoint covers only up to {}: records missing",
          path, hdr->base.value(), covered.value()));
    }

    lsn next = hdr->base;
    std::uint64_t off = format::segment_header_size;
    while (off < bytes.size()) {
      auto h = valid_record_at(bytes, off);
      std::string why;
      if (!h) {
        why = off + format::record_header_size > bytes.size() ? "partial record header"
              : !format::decode_record_header(bytes.subspan(off, format::record_header_size))
                  ? "bad record header"
                  : "record length past end of file or CRC mismatch";
      } else if (h->seq != next) {
        why = fmt::format("record carries lsn {}, expected {}", h->seq.value(), next.value());
      }
      if (!why.empty()) {
        // A record with a good CRC but the wrong lsn is no torn write: it is foreign, so never truncated.
        if (last && !h && !valid_record_after(bytes, off, next)) {
          // Zeros past the last record are a prepared segment's unused room, not a torn write.
          const std::uint64_t written = written_end(bytes, off);
          if (written > off) {
            log::warn("storage: {}: torn tail at byte {} ({}); truncating {} unacknowledged bytes", path, off,
                      why, written - off);
          }
          if (auto st = truncate_file(e, path, off); !st) return st.err();
          out.truncated_bytes += written - off;
          out.prepared_bytes += bytes.size() - written;
          break;
        }
        return corruption(path, off, why);
      }
      if (h->seq > covered) {
        record_view v{h->seq, h->type, bytes.subspan(off + format::record_header_size, h->length),
                      log_position{ids[i], off}};
        if (auto st = visit(v); !st) return st.err();
      }
      next = lsn{next.value() + 1};
      off += format::record_header_size + h->length;
    }
    out.segments.push_back(segment_info{ids[i], hdr->base, lsn{next.value() - 1}, off});
    out.next_segment = segment_id{ids[i].value() + 1};
    expected = next;
  }

  // Make what recovery saw durable before anything builds on it: a writer that died poisoned may have
  // left an undo (a cut of the last segment, a removed segment) in the page cache only, and a later
  // power loss must not bring those records back under lsns that get reused.
  if (!out.segments.empty()) {
    auto last = e.open_writable(join_path(dir, format::segment_file_name(out.segments.back().id)),
                                open_mode::open_existing);
    if (!last) return last.err();
    if (auto st = (*last)->sync(); !st) return st.err();
  }
  if (auto st = e.sync_dir(dir); !st) return st.err();

  out.next_lsn = expected.value_or(lsn{covered.value() + 1});
  if (out.segments.empty()) {
    out.start_new_segment = true;
  } else if (out.next_lsn.value() <= covered.value()) {
    // Only possible with sync modes that acknowledge before fdatasync: the snapshot saw records the log
    // lost. The snapshot wins; the log continues after it in a fresh segment.
    log::warn("storage: {}: checkpoint covers lsn {} but the log ends at {}; continuing after the checkpoint",
              dir, covered.value(), out.next_lsn.value() - 1);
    out.next_lsn = lsn{covered.value() + 1};
    out.start_new_segment = true;
  }
  return out;
}

}  // namespace weir::storage
