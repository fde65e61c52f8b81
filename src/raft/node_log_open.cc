// node_log::open: recovery of the node log's segments (the rest of node_log is in node_log.cc).
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "base/log.h"
#include "raft/node_log.h"

namespace weir::raft {
namespace {

error corruption(std::string reason) {
  return make_error(errc::corruption, std::move(reason));
}

// The numbers NNNNNNNN of the names "<base><infix>NNNNNNNN" among the names of a directory: the log's
// segments (infix ".") or its kept segments (".kept.").
std::vector<std::uint32_t> numbered(const std::vector<std::string>& names, const std::string& base,
                                    const std::string& infix) {
  std::vector<std::uint32_t> out;
  const std::string prefix = base + infix;
  for (const std::string& n : names) {
    if (n.size() != prefix.size() + 8 || n.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = n.substr(prefix.size());
    if (!std::all_of(digits.begin(), digits.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      continue;
    out.push_back(static_cast<std::uint32_t>(std::stoul(digits)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

result<std::unique_ptr<node_log>> node_log::open(storage::env& env, log_flusher& flusher, std::string path,
                                                 node_log_options opts) {
  auto nl = std::unique_ptr<node_log>(new node_log(env, flusher, std::move(path), opts));
  const std::string& p0 = nl->path_;
  const std::string& dir = nl->dir_;
  if (auto st = env.create_dirs(dir); !st) return st.err();
  auto names = env.list_dir(dir);
  if (!names) return names.err();
  const std::string base = p0.substr(p0.rfind('/') == std::string::npos ? 0 : p0.rfind('/') + 1);
  std::vector<std::uint32_t> nos = numbered(*names, base, ".");
  if (env.file_exists(p0)) nos.insert(nos.begin(), 0);
  // Segments are deleted oldest first, each deletion durable before the next: a hole is not a crash's.
  for (std::size_t i = 1; i < nos.size(); ++i)
    if (nos[i] != nos[i - 1] + 1)
      return corruption(fmt::format("{}: segment {} is missing (found {} and {})", p0, nos[i - 1] + 1,
                                    segment_path(p0, nos[i - 1]), segment_path(p0, nos[i])));

  // Kept segments are stream data, not raft log: listed (for kept_segments() and drop_kept), never read.
  for (const std::uint32_t no : numbered(*names, base, ".kept.")) {
    const std::string p = kept_segment_path(p0, no);
    auto f = env.open_readable(p);
    if (!f) return f.err();
    auto size = (*f)->size();
    if (!size) return size.err();
    nl->kept_.emplace(no, kept_segment{*size, false});
  }
  // A segment number is never reused: a place names its segment for good, kept or not.
  const std::uint32_t above_kept = nl->kept_.empty() ? 1 : nl->kept_.rbegin()->first + 1;

  std::map<group_id, recovering_group> groups;
  std::uint32_t next_no = std::max(above_kept, nos.empty() ? 1 : nos.back() + 1);
  for (std::size_t i = 0; i < nos.size(); ++i) {
    const bool last = i + 1 == nos.size();
    const std::string p = segment_path(p0, nos[i]);
    auto content = storage::read_whole_file(env, p);
    if (!content) return content.err();
    const std::span<const std::byte> all(*content);
    if (all.size() < record::file_header_size) {
      if (!last) return corruption(fmt::format("{}: {} bytes, shorter than a segment header", p, all.size()));
      // Created, but torn before its first sync: nothing in it was ever acknowledged.
      if (auto st = env.remove_file(p); !st) return st.err();
      nl->tail_cut_ += all.size();
      next_no = std::max(above_kept, nos[i]);
      continue;
    }
    if (!record::file_header_version(all)) {
      // A spare renamed into place whose header never reached the disk (a crash during the roll): zeros,
      // perhaps after part of the header. Nothing in it was ever acknowledged.
      if (last && storage::nonzero_end(all) <= record::file_header_size) {
        log::info("raft node log {}: removing it: {} bytes with no complete header (a roll cut short)", p,
                  all.size());
        if (auto st = env.remove_file(p); !st) return st.err();
        if (auto st = env.sync_dir(dir); !st) return st.err();
        nl->tail_cut_ += storage::nonzero_end(all);
        next_no = std::max(above_kept, nos[i]);
        continue;
      }
      return corruption(fmt::format("{}: not a weir raft log segment", p));
    }
    std::size_t pos = record::file_header_size;
    while (pos < all.size()) {
      auto d = record::decode_record(all.subspan(pos));
      if (!d || !d->has_value()) {
        // Only the last batch of the last segment can be torn: every segment before it was closed after
        // its last batch had synced whole.
        if (!last)
          return corruption(
              fmt::format("{} at byte {}: {}", p, pos, d ? std::string("record cut short") : d.err().reason));
        break;
      }
      const record::log_record& rec = (*d)->rec;
      groups[rec.group].apply(rec.payload, nos[i], pos);
      pos += (*d)->consumed;
    }
    if (last) {
      // The last segment may hold bytes a killed process wrote but never synced (the page cache kept
      // them): they were read as part of the log, so they must be durable before anything follows them
      // in a new segment. A torn tail is cut first.
      auto f = env.open_writable(p, storage::open_mode::open_existing);
      if (!f) return f.err();
      if (pos < all.size()) {
        // Zeros past the last record are a prepared segment's unused room, cut quietly; a record cut
        // short before them is a torn tail, as is what a segment that grew as written ends with.
        const std::uint64_t written = storage::written_end(all, pos);
        if (written > pos) {
          log::warn("raft node log {}: cutting {} bytes of torn tail at byte {}", p, written - pos, pos);
          nl->tail_cut_ += written - pos;
        }
        if (auto st = (*f)->truncate(pos); !st) return st.err();
      }
      if (auto st = (*f)->sync(); !st) return st.err();
    }
    nl->segs_.push_back(segment{nos[i], p, pos, 0});
  }
  for (auto& [g, rg] : groups) {
    auto done = std::move(rg).finish();
    if (!done) return corruption(fmt::format("{}: group {}: {}", p0, g.value(), done.err().reason));
    nl->recovered_.emplace(g, std::move(done->first));
    nl->live_total_ += done->second.live_bytes();
    nl->live_.emplace(g, std::move(done->second));
  }

  // A new segment for this run, beginning with every group's state: whatever the last one ended with
  // (a cut tail, a missing preamble) is never appended to.
  if (opts.prepare_segments) {
    nl->spares_ = std::make_unique<storage::segment_spares>(
        env, dir, std::min(opts.prepared_first_bytes, opts.segment_bytes), opts.segment_bytes,
        opts.prepared_bytes_per_second, spare_name(p0));
    nl->spares_->request();
  }
  const std::string p = segment_path(p0, next_no);
  std::optional<storage::segment_spares::spare> spare = nl->spares_ ? nl->spares_->take() : std::nullopt;
  auto f = create_segment(env, p, spare, nl->spares_.get());
  if (!f) return f.err();
  const auto header = record::encode_file_header();
  std::vector<std::byte> bytes(header.begin(), header.end());
  const auto pre = nl->preamble();
  bytes.insert(bytes.end(), pre.begin(), pre.end());
  if (auto st = (*f)->append(bytes); !st) return st.err();
  if (auto st = (*f)->sync(); !st) return st.err();
  if (auto st = env.sync_dir(dir); !st) return st.err();
  nl->file_ = std::move(f).value();
  nl->segs_.push_back(segment{next_no, p, bytes.size(), 0, bytes.size()});
  nl->prepared_ = spare ? spare->bytes : 0;
  if (spare) ++nl->prepared_segments_;
  nl->batch_segment_[1] = next_no;
  // The new segment is a preamble's worth of bytes more, and nothing else would check them until the next
  // batch: a node restarted in a quiet cluster (no write, no election) would keep every segment it
  // restarted with, one more per restart.
  nl->maybe_compact();
  return nl;
}

}  // namespace weir::raft
