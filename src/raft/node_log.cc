#include "raft/node_log.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "base/log.h"
#include "raft/byte_codec.h"

namespace weir::raft {
namespace {

// A carry record holds at most this much entry data, far below record::max_record_body.
constexpr std::uint64_t max_carry_record = 1u << 20;

using wanted_ranges = std::map<group_id, std::vector<std::pair<std::uint64_t, std::uint64_t>>>;

bool wanted(const wanted_ranges& w, group_id g, std::uint64_t index) {
  auto it = w.find(g);
  if (it == w.end()) return false;
  for (const auto& [lo, hi] : it->second)
    if (index >= lo && index < hi) return true;
  return false;
}

}  // namespace

// The live entries of a pass's segments, read back on the flusher's thread: for each segment, the last write
// in it of each index wanted from it (a later write of the same index in the same segment supersedes an
// earlier one; one in a newer segment would have made the index not wanted from this one). A live index sits
// in one segment, so the segments' wanted ranges are disjoint and one map holds them all.
struct node_log::carried {
  std::map<group_id, std::map<std::uint64_t, stored_entry>> entries;

  // A segment is read in pieces of about this size into one buffer, reused for every segment of the pass:
  // read whole, each segment took a fresh zero-filled buffer of its size (64 MiB), faulted in page by page
  // (8% of a cluster node's samples under sustained 64 KiB appends: docs/benchmarks.md, "Cluster CPU: the
  // copies of an append").
  static constexpr std::size_t piece_bytes = 1u << 20;
  std::vector<std::byte> buf;

  status read(storage::env& env, const std::string& path, const wanted_ranges& w) {
    auto file = env.open_readable(path);
    if (!file) return file.err();
    auto size = (*file)->size();
    if (!size) return size.err();
    const std::uint64_t end = *size;
    std::uint64_t base = 0;  // the file offset of buf[0]
    std::size_t have = 0;    // bytes of the file in buf
    std::size_t pos = 0;     // the next record's offset in buf
    // Moves what is left from `pos` to the front and reads on until buf holds `need` bytes from there
    // (or the file ended).
    auto fill = [&](std::size_t need) -> status {
      if (pos > 0) {
        if (have > pos) std::memmove(buf.data(), buf.data() + pos, have - pos);
        base += pos;
        have -= pos;
        pos = 0;
      }
      const std::size_t want =
          static_cast<std::size_t>(std::min<std::uint64_t>(std::max(need, piece_bytes), end - base));
      if (buf.size() < want) buf.resize(want);
      while (have < want) {
        auto n = (*file)->read(base + have, std::span<std::byte>(buf.data() + have, want - have));
        if (!n) return n.err();
        if (*n == 0) break;
        have += *n;
      }
      return {};
    };
    if (auto st = fill(record::file_header_size); !st) return st;
    if (!record::file_header_version(std::span<const std::byte>(buf.data(), have)))
      return make_error(errc::corruption, fmt::format("{}: not a weir raft log segment", path));
    pos = record::file_header_size;
    while (base + pos < end) {
      const std::span<const std::byte> rest(buf.data() + pos, have - pos);
      auto d = record::decode_record(rest);
      if (d && !d->has_value()) {
        // Cut short by the end of the buffer: read on, the whole record at once if its length is in.
        std::size_t need = record::record_header_size;
        if (rest.size() >= 4) {
          std::uint32_t body = 0;
          byte_reader(rest).u32(body);  // the record's body length (log_record.h)
          need += body;
        }
        if (rest.size() >= need || base + pos + need > end)
          return make_error(errc::corruption,
                            fmt::format("{} at byte {}: record cut short", path, base + pos));
        if (auto st = fill(need); !st) return st;
        continue;
      }
      if (!d)
        return make_error(errc::corruption,
                          fmt::format("{} at byte {}: {}", path, base + pos, d.err().reason));
      const record::log_record& rec = (*d)->rec;
      auto take = [&](log_index first, const std::vector<wire::entry>& items) {
        std::uint64_t i = first.value();
        for (const wire::entry& e : items) {
          if (wanted(w, rec.group, i))
            entries[rec.group][i] = stored_entry{e.term, e.type, {e.data.begin(), e.data.end()}};
          ++i;
        }
      };
      if (const auto* e = std::get_if<record::entries>(&rec.payload)) take(e->first, e->items);
      if (const auto* c = std::get_if<record::carry>(&rec.payload)) take(c->first, c->items);
      pos += (*d)->consumed;
    }
    return {};
  }
};

node_log::node_log(storage::env& env, log_flusher& f, std::string path, node_log_options opts)
    : env_(env), flusher_(f), path_(std::move(path)), opts_(opts), keep_(opts_.keep) {
  const auto slash = path_.rfind('/');
  dir_ = slash == std::string::npos ? std::string(".") : path_.substr(0, slash);
}

node_log::~node_log() {
  *alive_ = false;
  // A clean close leaves no prepared zeros for recovery to cut. The flusher is gone by now (its owner
  // destroys it first), so no write into file_ is under way; a roll still under way replaced file_ by a
  // file this object never saw, and cut this one's zeros itself.
  if (file_ && !rolling_ && !poisoned_ && prepared_ > file_->size()) {
    status st = file_->truncate(file_->size());
    if (st) st = file_->sync();
    if (!st)
      log::warn("raft node log: cannot cut the last segment's unused zeros at close ({}); recovery will",
                st.err().reason);
  }
}

std::string node_log::spare_name(const std::string& path) {
  // Not "<base>.NNNNNNNN": segment_numbers (node_log_open.cc) never takes it for a segment.
  const auto slash = path.rfind('/');
  return (slash == std::string::npos ? path : path.substr(slash + 1)) + ".spare";
}

bool node_log::wait_for_prepared_segment() {
  return spares_ && spares_->wait_ready();
}

std::string node_log::segment_path(const std::string& path, std::uint32_t no) {
  // Segment 0 is the single file of weir before segments.
  return no == 0 ? path : fmt::format("{}.{:08}", path, no);
}

std::string node_log::kept_segment_path(const std::string& path, std::uint32_t no) {
  // Not "<base>.NNNNNNNN": recovery never takes it for a segment.
  return fmt::format("{}.kept.{:08}", path, no);
}

std::vector<std::byte> node_log::preamble() const {
  std::vector<std::byte> out;
  std::vector<wire::server> scratch;
  for (const auto& [g, live] : live_)
    record::encode_record(record::log_record{g, live.state_record(scratch)}, out);
  return out;
}

group_state node_log::take_group_state(group_id g) {
  auto it = recovered_.find(g);
  if (it == recovered_.end()) return group_state{};
  group_state s = std::move(it->second);
  recovered_.erase(it);
  return s;
}

std::uint64_t node_log::add(const record::log_record& r) {
  if (opts_.max_batch_bytes != 0 && pending_.size() >= opts_.max_batch_bytes) seal();
  const bool sealed_roll = std::any_of(sealed_.begin(), sealed_.end(),
                                       [](const sealed_batch& b) { return b.roll_preamble.has_value(); });
  if (pending_.empty() && !roll_preamble_ && !sealed_roll &&
      segs_.back().bytes - segs_.back().preamble_bytes >= opts_.segment_bytes) {
    // The next flush starts a segment. Its preamble is the state before this batch, so that the batch's
    // records follow it as they follow the older segments: a torn prefix of the batch then recovers a
    // state the log really passed through.
    roll_preamble_ = preamble();
  }
  // A new batch starts with room for about as much as the last one held: a batch grown from nothing by
  // doubling copies its records once more on the way (and, at megabytes, maps fresh pages each time).
  if (pending_.capacity() == 0) pending_.reserve(batch_hint_);
  const std::size_t start = pending_.size();
  const std::size_t places_before = pending_places_.size();
  record::encode_record(r, pending_);
  if (on_placed_) note_places(r, start);
  if (!roll_preamble_ && wants_prepared_segment(start, sealed_roll)) {
    // An early roll onto a ready spare: the batches before this record stay in the segment they fit in,
    // and this record's batch starts the prepared segment, with the preamble of a size roll.
    std::vector<std::byte> rec(pending_.begin() + static_cast<std::ptrdiff_t>(start), pending_.end());
    std::vector<batch_place> rec_places(pending_places_.begin() + static_cast<std::ptrdiff_t>(places_before),
                                        pending_places_.end());
    for (batch_place& p : rec_places) p.record_offset -= start;
    pending_.resize(start);
    pending_places_.resize(places_before);
    if (!pending_.empty()) seal();
    roll_preamble_ = preamble();
    pending_ = std::move(rec);
    pending_places_ = std::move(rec_places);
  }
  live_group& live = live_[r.group];
  live_total_ -= live.live_bytes();
  live.apply(r.payload, open_);
  live_total_ += live.live_bytes();
  return open_;
}

// The entries of `r`, just encoded into pending_ at `offset`, for on_placed_.
void node_log::note_places(const record::log_record& r, std::size_t offset) {
  auto note = [&](log_index first, const std::vector<wire::entry>& items) {
    item_data_offsets at;
    std::uint64_t i = first.value();
    for (const wire::entry& e : items)
      pending_places_.push_back(batch_place{r.group, log_index(i++), offset, at.next(e.data.size())});
  };
  if (const auto* e = std::get_if<record::entries>(&r.payload)) note(e->first, e->items);
  if (const auto* c = std::get_if<record::carry>(&r.payload)) note(c->first, c->items);
}

// The batch just made durable: where its entries sit (flushing_segment_, from flushing_offset_ on).
void node_log::report_places() {
  // Moved out first: the callback may add records and start the next flush, which sets these anew.
  const std::vector<batch_place> places = std::move(flushing_places_);
  flushing_places_.clear();
  const std::uint32_t seg = flushing_segment_;
  const std::uint64_t base = flushing_offset_;
  if (!on_placed_) return;
  for (const batch_place& p : places)
    on_placed_(p.group, p.index, entry_place{seg, base + p.record_offset, p.data_offset});
}

std::vector<std::uint32_t> node_log::kept_segments() const {
  std::vector<std::uint32_t> out;
  for (const auto& [no, k] : kept_) out.push_back(no);
  return out;
}

std::uint64_t node_log::kept_bytes() const {
  std::uint64_t n = 0;
  for (const auto& [no, k] : kept_) n += k.bytes;
  return n;
}

std::uint64_t node_log::disk_bytes() const {
  std::uint64_t n = 0;
  for (const segment& s : segs_) n += s.bytes;
  return n;
}

std::uint64_t node_log::live_bytes() const {
  return record::file_header_size + live_total_;
}

void node_log::seal() {
  const std::uint64_t cap = opts_.max_batch_bytes != 0 ? opts_.max_batch_bytes + (1u << 20) : 8u << 20;
  batch_hint_ = static_cast<std::size_t>(std::min<std::uint64_t>(pending_.size(), cap));
  sealed_.push_back(
      sealed_batch{open_++, std::move(pending_), std::move(roll_preamble_), std::move(pending_places_)});
  pending_ = {};
  pending_places_ = {};
  roll_preamble_.reset();
}

// As log_writer::wants_prepared_segment: the batch that `pending_` holds (its record from `start` on being
// the one just added) should start a new segment on a ready spare, because the newest segment holds more
// than its preamble and is not prepared or has no room left in its zeros for what is queued for it.
bool node_log::wants_prepared_segment(std::size_t start, bool sealed_roll) const {
  if (!spares_ || sealed_roll) return false;
  const segment& s = segs_.back();
  std::uint64_t end = s.bytes;
  for (const sealed_batch& b : sealed_) end += b.bytes.size();
  if (end + start <= s.preamble_bytes) return false;
  if (prepared_ != 0 && end + pending_.size() <= prepared_) return false;
  return spares_->ready();
}

// Opens a new segment file: the spare renamed into place (then written over from byte 0) or a new file.
// Blocking; on the flusher's thread, except at open.
result<std::unique_ptr<storage::writable_file>> node_log::create_segment(
    storage::env& env, const std::string& path, const std::optional<storage::segment_spares::spare>& spare,
    storage::segment_spares* spares) {
  if (spare) {
    status renamed = env.rename_file(spare->path, path);
    spares->request();  // only now: a new preparation starts by removing what is at the spare's name
    if (!renamed) return renamed.err();
  }
  return env.open_writable(path, spare ? storage::open_mode::overwrite : storage::open_mode::create_new);
}

// A roll, as one job on the flusher: the segment left loses its unused zeros (durably, before the new
// segment's directory entry can be: only the last segment may hold a zero tail), the new one is created
// (or a spare renamed into place) and gets its header, preamble and first batch, synced; on_flushed then
// syncs the directory.
void node_log::start_segment(std::uint64_t batch, const std::vector<std::byte>& preamble,
                             const std::vector<std::byte>& records) {
  const std::uint32_t no = segs_.back().no + 1;
  std::string p = segment_path(path_, no);
  std::optional<storage::segment_spares::spare> spare = spares_ ? spares_->take() : std::nullopt;
  if (spares_ && !spare) spares_->request();
  const bool trim = prepared_ > segs_.back().bytes;
  const auto header = record::encode_file_header();
  std::vector<std::byte> bytes(header.begin(), header.end());
  bytes.insert(bytes.end(), preamble.begin(), preamble.end());
  const std::uint64_t preamble_bytes = bytes.size();
  bytes.insert(bytes.end(), records.begin(), records.end());
  bytes_written_ += bytes.size();
  flushing_segment_ = no;
  flushing_offset_ = preamble_bytes;  // the batch's records follow the header and preamble
  segs_.push_back(segment{no, p, bytes.size(), batch, preamble_bytes});
  batch_segment_[batch] = no;
  prepared_ = spare ? spare->bytes : 0;
  if (spare) ++prepared_segments_;
  rolling_ = true;
  auto slot = std::make_shared<std::unique_ptr<storage::writable_file>>();
  flusher_.run(
      [&env = env_, old = file_.get(), trim, p = std::move(p), spare, spares = spares_.get(), slot,
       bytes = std::move(bytes)]() -> status {
        if (trim) {
          if (auto st = old->truncate(old->size()); !st) return st;
          if (auto st = old->sync(); !st) return st;
        }
        auto f = create_segment(env, p, spare, spares);
        if (!f) return f.err();
        *slot = std::move(f).value();
        if (auto st = (*slot)->append(bytes); !st) return st;
        return (*slot)->sync();
      },
      [this, batch, slot, alive = alive_](status st) {
        if (!*alive) return;
        rolling_ = false;
        if (*slot) file_ = std::move(*slot);
        on_flushed(batch, true, std::move(st));
      });
}

void node_log::flush() {
  if (flushing_ || (pending_.empty() && sealed_.empty())) return;
  if (!pending_.empty()) seal();  // the open batch goes after the full ones
  if (poisoned_) {
    while (!sealed_.empty()) {
      started_ = sealed_.front().no;
      sealed_.pop_front();
      if (on_synced_) on_synced_(started_, *poisoned_);
    }
    return;
  }
  sealed_batch next = std::move(sealed_.front());
  sealed_.pop_front();
  const std::uint64_t batch = next.no;
  started_ = batch;
  flushing_ = true;
  flushing_places_ = std::move(next.places);
  if (next.roll_preamble) return start_segment(batch, *next.roll_preamble, next.bytes);
  std::vector<std::byte> bytes = std::move(next.bytes);
  bytes_written_ += bytes.size();
  flushing_segment_ = segs_.back().no;
  flushing_offset_ = segs_.back().bytes;  // appended at the segment's end
  segs_.back().bytes += bytes.size();
  flusher_.flush(*file_, std::move(bytes), [this, batch, alive = alive_](status st) {
    if (*alive) on_flushed(batch, false, std::move(st));
  });
}

void node_log::on_flushed(std::uint64_t batch, bool new_segment, status st) {
  if (st && new_segment) {
    // Nothing in a new file counts until its directory entry is durable.
    flusher_.run([&env = env_, dir = dir_] { return env.sync_dir(dir); },
                 [this, batch, alive = alive_](status s) {
                   if (*alive) finish_batch(batch, std::move(s));
                 });
    return;
  }
  finish_batch(batch, std::move(st));
}

void node_log::finish_batch(std::uint64_t batch, status st) {
  flushing_ = false;
  if (!st && !poisoned_) {
    log::error("raft node log: batch {} failed: {}; the log is poisoned until restart", batch,
               st.err().reason);
    poisoned_ = st.err();
  }
  if (!poisoned_) {
    synced_ = batch;
    ++batches_synced_;
    report_places();  // before on_synced: who learns a batch is durable knows where its entries are
  }
  flushing_places_.clear();
  if (on_synced_) on_synced_(batch, poisoned_ ? status(*poisoned_) : status());
  maybe_delete();
  maybe_compact();
  flush();  // records added during the flush form the next batch
}

std::uint32_t node_log::segment_of(const entry_run& r) const {
  if (r.seg != no_segment) return r.seg;
  if (r.batch > started_) return no_segment;  // not flushed yet
  auto it = batch_segment_.upper_bound(r.batch);
  if (it == batch_segment_.begin()) return no_segment;
  return std::prev(it)->second;
}

// Compacts when the log holds more than twice its live bytes plus two segments. A pass takes the oldest
// segments, as many as the check would take one after the other if no write came in between (each one's
// bytes off, its live entries' bytes on, until the log is back under the bound; never the one being
// written): their live entries are read back (on the flusher, one job) and carried into the open batch, and
// once that batch is durable the segments are deleted (one job: the unlinks, oldest first, then one
// directory sync). Taking them all at once keeps compaction up with sustained writes: a pass costs three
// disk round trips whatever it takes, where one segment per pass left the segments written meanwhile for
// later passes. Checked after every batch, every deletion and at open.
void node_log::maybe_compact() {
  if (compaction_ || poisoned_ || compaction_failed_ || segs_.size() < 2) return;
  const std::uint64_t bound = 2 * live_bytes() + 2 * opts_.segment_bytes;
  std::uint64_t projected = disk_bytes();
  if (projected <= bound) return;
  std::map<std::uint32_t, std::uint64_t> live_in;  // a segment's live entries' bytes (an estimate)
  for (const auto& [g, live] : live_)
    for (const entry_run& r : live.runs())
      if (const std::uint32_t s = segment_of(r); s != no_segment) live_in[s] += r.bytes;
  std::size_t count = 0;
  while (count + 1 < segs_.size() && projected > bound) {
    const segment& s = segs_[count++];
    projected += live_in[s.no];
    projected = projected > s.bytes ? projected - s.bytes : 0;
  }
  compaction_ = compaction{segs_.front().no, count};
  // What to read back from each segment of the pass.
  auto w = std::make_shared<std::map<std::uint32_t, wanted_ranges>>();
  for (const auto& [g, live] : live_)
    for (const entry_run& r : live.runs())
      if (const std::uint32_t s = segment_of(r); compaction_->takes(s))
        (*w)[s][g].emplace_back(r.first.value(), r.end().value());
  if (w->empty()) {
    compaction_->delete_after = last_record_batch();
    return maybe_delete();
  }
  std::vector<std::pair<std::string, wanted_ranges>> reads;  // oldest first
  for (auto& [no, ranges] : *w) reads.emplace_back(segment_path(path_, no), std::move(ranges));
  auto c = std::make_shared<carried>();
  flusher_.run(
      [&env = env_, reads = std::move(reads), c] {
        for (const auto& [path, ranges] : reads)
          if (auto st = c->read(env, path, ranges); !st) return st;
        return status();
      },
      [this, first = compaction_->first, c, alive = alive_](status st) {
        if (!*alive) return;
        if (!st) return give_up_compaction(st.err());
        on_carried_read(first, *c);
      });
}

void node_log::give_up_compaction(const error& e) {
  log::error("raft node log: compaction stopped until restart: {}", e.reason);
  compaction_failed_ = true;
  compaction_.reset();
}

void node_log::on_carried_read(std::uint32_t first, const carried& c) {
  if (!compaction_ || compaction_->first != first || poisoned_) return;
  // What is still live of the segments now (records added during the read may have cut some).
  std::vector<record::log_record> recs;
  std::uint64_t n = 0;
  for (const auto& [g, live] : live_) {
    auto have = c.entries.find(g);
    record::carry cur;
    std::uint64_t cur_bytes = 0;
    // The group by value: clang before 16 does not let a lambda capture a structured binding (P1091).
    auto close = [&, group = g] {
      if (!cur.items.empty()) recs.push_back(record::log_record{group, std::move(cur)});
      cur = record::carry{};
      cur_bytes = 0;
    };
    for (const entry_run& r : live.runs()) {
      const std::uint32_t seg = segment_of(r);
      if (!compaction_->takes(seg)) continue;
      for (std::uint64_t i = r.first.value(); i < r.end().value(); ++i) {
        const stored_entry* e = nullptr;
        if (have != c.entries.end()) {
          auto it = have->second.find(i);
          if (it != have->second.end()) e = &it->second;
        }
        if (e == nullptr)
          return give_up_compaction(
              make_error(errc::corruption, fmt::format("group {}: live entry {} not found in {}", g.value(),
                                                       i, segment_path(path_, seg))));
        if (!cur.items.empty() && (cur.first.value() + cur.items.size() != i || cur_bytes > max_carry_record))
          close();
        if (cur.items.empty()) cur.first = log_index(i);
        cur.items.push_back(wire::entry{e->term, e->type, e->data});
        cur_bytes += e->data.size();
        ++n;
      }
    }
    close();
  }
  for (const auto& r : recs) add(r);
  entries_carried_ += n;
  compaction_->delete_after = last_record_batch();
  flush();
  maybe_delete();
}

// The segments may go once every record added so far is durable: the carried entries, the records that
// killed their other entries (a snapshot or a truncate still in a batch), and the next segment's preamble.
std::uint64_t node_log::last_record_batch() const {
  return pending_.empty() ? open_ - 1 : open_;
}

// Deletes the pass's segments: unlinks (or renames to kept, set_keep) oldest first, then one directory sync.
// Recovery needs consecutive segment numbers (node_log_open.cc); a crash before the sync may keep any
// number of these changes, and since the file systems weir runs on (ext4, xfs) journal a directory's
// changes in the order they were made, what it keeps is the oldest ones: the log left is a suffix of
// segments, which recovers like the log after the pass (every segment begins with a preamble, and the
// carried entries are durable already). A kept segment's new name is not a segment's: recovery skips it.
void node_log::maybe_delete() {
  if (!compaction_ || !compaction_->delete_after || compaction_->deleting || poisoned_) return;
  if (synced_ < *compaction_->delete_after) return;
  compaction_->deleting = true;
  WEIR_ASSERT(segs_.front().no == compaction_->first && segs_.size() > compaction_->count,
              "node log: compacting {} segments from {} but the oldest is {} of {}", compaction_->count,
              compaction_->first, segs_.front().no, segs_.size());
  // Each segment is unlinked or, if the caller keeps it, renamed (the version-1 file is never kept).
  std::vector<std::pair<std::string, std::string>> moves;  // (path, kept path; empty: unlink)
  std::vector<bool> kept;
  for (std::size_t i = 0; i < compaction_->count; ++i) {
    const segment& s = segs_[i];
    const bool k = keep_ && s.no != 0 && keep_(s.no);
    moves.emplace_back(s.path, k ? kept_segment_path(path_, s.no) : std::string());
    kept.push_back(k);
  }
  auto removed = std::make_shared<std::size_t>(0);
  flusher_.run(
      [&env = env_, moves = std::move(moves), dir = dir_, removed] {
        status st;
        for (const auto& [from, to] : moves) {
          st = to.empty() ? env.remove_file(from) : env.rename_file(from, to);
          if (!st) break;
          ++*removed;
        }
        // The unlinks made are synced even after a failed one: the log then goes on without them.
        if (*removed == 0) return st;
        status synced = env.sync_dir(dir);
        return st ? synced : st;
      },
      [this, removed, kept = std::move(kept), alive = alive_](status st) {
        if (!*alive) return;
        for (std::size_t i = 0; i < *removed; ++i) {
          const segment& s = segs_.front();
          if (kept[i])
            kept_.emplace(s.no, kept_segment{s.bytes, false});
          else
            bytes_reclaimed_ += s.bytes;
          ++segments_deleted_;
          for (auto it = batch_segment_.begin(); it != batch_segment_.end();)
            it = it->second == s.no ? batch_segment_.erase(it) : std::next(it);
          segs_.pop_front();
        }
        if (!st) return give_up_compaction(st.err());
        compaction_.reset();
        maybe_compact();
      });
}

// Unlinks oldest first, then one directory sync (as maybe_delete).
void node_log::drop_kept(std::function<bool(std::uint32_t)> still_needed, std::function<void(status)> done) {
  std::vector<std::uint32_t> nos;
  std::vector<std::string> paths;
  for (auto& [no, k] : kept_) {
    if (k.dropping || (still_needed && still_needed(no))) continue;
    k.dropping = true;
    nos.push_back(no);
    paths.push_back(kept_segment_path(path_, no));
  }
  auto removed = std::make_shared<std::size_t>(0);
  flusher_.run(
      [&env = env_, paths = std::move(paths), dir = dir_, removed] {
        status st;
        for (const std::string& p : paths) {
          st = env.remove_file(p);
          // Already gone (removed by hand): what this call was for.
          if (!st && st.err().is<storage::errc>() && st.err().as<storage::errc>() == storage::errc::not_found)
            st = {};
          if (!st) break;
          ++*removed;
        }
        if (*removed == 0) return st;
        status synced = env.sync_dir(dir);
        return st ? synced : st;
      },
      [this, nos = std::move(nos), removed, done = std::move(done), alive = alive_](status st) {
        if (!*alive) return;
        for (std::size_t i = 0; i < nos.size(); ++i) {
          auto it = kept_.find(nos[i]);
          if (it == kept_.end()) continue;
          if (i < *removed) {
            bytes_reclaimed_ += it->second.bytes;
            kept_.erase(it);
          } else {
            it->second.dropping = false;
          }
        }
        if (done) done(std::move(st));
      });
}

}  // namespace weir::raft
