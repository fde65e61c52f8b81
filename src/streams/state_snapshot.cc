// state_machine::snapshot and restore: the checkpoint blob of one core's streams. Layout in
// docs/log-format.md, "Checkpoint blob of a stream state machine"; primitives from wire.h.
#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_set>

#include "streams/command_codec.h"
#include "streams/state_machine.h"
#include "streams/wire.h"

namespace weir::streams {

namespace {

constexpr std::string_view snapshot_magic = "weirsnap";
// 6: one part, as 5, with each stream's fork references by origin (a count, then per reference the
//    retain's index and group, the fork's path and the retain's time) after its anonymous count, and the
//    part's tombstones (fork_tombstone_command) after the held paths.
// 5: one part, as 4, with each fork's origin (fork_resolution::origin: a u8 presence flag, then the
//    source's group and the retain's index as varints) after its `retained` flag.
// 4: one part of the machine (snapshot_part): no next generation; otherwise as 3.
// 3: the held paths of deleted streams follow the streams (delete_command::hold_ms); producers carry
//    their last use (idle expiry).
// 2: a fork lists its own records only (it reads the rest from its source); no "to stitch" flag.
// 1: a fork listed its inherited records too (still read: they are dropped on restore).
// 7: as 3, and each stream says where its own records begin (its bytes before are in cold objects;
// memory_log::held_from). Written only when some stream has bytes only in objects, so that a directory
// without a cold tier stays readable by a weir that does not know it.
constexpr std::uint64_t snapshot_version_held = 7;
// 8: one part, as 6, and each stream says where its own records begin, as 7 (a cluster node's group
// snapshot once some stream of the group has bytes only in objects: its cold index part says where).
constexpr std::uint64_t snapshot_version_part_held = 8;
constexpr std::uint64_t snapshot_version_part_references = 6;
constexpr std::uint64_t snapshot_version_part_origins = 5;
constexpr std::uint64_t snapshot_version_part = 4;
constexpr std::uint64_t snapshot_version = 3;
constexpr std::uint64_t snapshot_version_no_holds = 2;
constexpr std::uint64_t snapshot_version_copied_forks = 1;

// How a record's bytes are written.
enum class record_kind : std::uint8_t { on_disk = 0, inline_bytes = 1 };

// Writes `r`, as a reference when its location is known (and `referencable` accepts it, when given),
// else with its bytes. False for a cold record that cannot be written either way.
bool write_record(wire::writer& w, const record& r, const state_machine::location_predicate* referencable) {
  const bool reference = r.data.at.known() && (!referencable || (*referencable)(r.data.at));
  if (!reference && r.data.cold()) return false;
  // The fields go into a local buffer and out in one append: a checkpoint writes every record of the
  // core's streams on its loop (hundreds of thousands), byte by byte that was half its time.
  char buf[9 * wire::max_var_bytes];
  char* p = wire::put_var(buf, r.end);
  p = wire::put_var(p, r.data.size);
  p = wire::put_var(p, r.messages);
  if (reference) {
    *p++ = static_cast<char>(record_kind::on_disk);
    p = wire::put_var(p, r.data.at.segment);
    p = wire::put_var(p, r.data.at.offset);
    p = wire::put_var(p, r.data.at.core);
    p = wire::put_var(p, r.data.at.data_offset);
    p = wire::put_var(p, r.data.begin);
    w.raw(std::string_view(buf, static_cast<std::size_t>(p - buf)));
  } else {
    *p++ = static_cast<char>(record_kind::inline_bytes);
    w.raw(std::string_view(buf, static_cast<std::size_t>(p - buf)));
    w.raw(r.data.view());
  }
  return true;
}

std::vector<std::byte> to_bytes(const std::string& bytes) {
  const auto* first = reinterpret_cast<const std::byte*>(bytes.data());
  return std::vector<std::byte>(first, first + bytes.size());
}

error truncated() {
  return make_error(codec_errc::truncated, "snapshot truncated or malformed");
}
error bad(std::string reason) {
  return make_error(codec_errc::bad_value, "snapshot: " + reason);
}

// A varint that must fit in 32 bits.
std::uint32_t read_u32(wire::reader& r) {
  std::uint64_t v = r.var();
  if (v > std::numeric_limits<std::uint32_t>::max()) r.fail();
  return static_cast<std::uint32_t>(v);
}

// Reads one record; false (reason set) when its values are impossible.
bool read_record(wire::reader& in, record& out, std::string& reason) {
  out.end = in.var();
  out.data.size = read_u32(in);
  out.messages = read_u32(in);
  std::uint8_t kind = in.u8();
  if (!in.ok()) return true;  // reported as truncated by the caller
  if (out.data.size == 0 || out.data.size > out.end) {
    reason = "record of impossible size";
    return false;
  }
  if (kind == static_cast<std::uint8_t>(record_kind::on_disk)) {
    out.data.at.segment = in.var();
    out.data.at.offset = in.var();
    out.data.at.core = read_u32(in);
    out.data.at.data_offset = read_u32(in);
    out.data.begin = read_u32(in);
    if (in.ok() && !out.data.at.known()) {
      reason = "record on disk in segment 0";
      return false;
    }
    return true;
  }
  if (kind == static_cast<std::uint8_t>(record_kind::inline_bytes)) {
    std::string bytes = in.bytes(out.data.size);
    if (in.ok()) out.data.buf = make_chunk(std::move(bytes));
    return true;
  }
  reason = "unknown record kind";
  return false;
}

}  // namespace

void state_machine::write_stream_head(wire::writer& w, const std::string& path, const stream_state& s,
                                      bool part) {
  w.str(path);
  w.var(s.meta.generation);
  w.str(s.meta.content_type);
  w.exp(s.meta.expiry);
  w.exp(s.requested_expiry);
  w.boolean(s.meta.closed);
  w.svar(s.last_access_ms);
  w.boolean(s.soft_deleted);
  if (part) {
    w.var(s.ref_count);
    w.var(s.origins.size());
    for (const auto& [index, ref] : s.origins) {  // by index (a std::map): the same state, the same bytes
      w.var(index);
      w.var(ref.group);
      w.str(ref.fork);
      w.svar(ref.since_ms);
    }
  } else {
    // A single node's blob: references are a count (a single node never has them by origin).
    w.var(s.references());
  }
  w.opt(s.fork, [&](const fork_spec& f) {
    w.str(f.source);
    w.opt(f.offset, [&](stream_offset o) { w.var(o.value()); });
    w.var(f.sub_offset);
    w.var(f.resolved.point.value());
    w.str(f.resolved.source_content_type);
    w.exp(f.resolved.source_expiry);
    w.boolean(f.resolved.retained);
    if (part) {
      w.opt(f.resolved.origin, [&](const fork_origin& o) {
        w.var(o.group);
        w.var(o.index);
      });
    }
  });
  w.opt(s.closed_by, [&](const producer_ref& p) {
    w.str(p.id);
    w.var(p.epoch);
    w.var(p.seq);
  });
  w.opt(s.last_seq, [&](const std::string& v) { w.str(v); });
  w.var(s.producers.size());
  for (const auto& [id, p] : s.producers) {
    w.str(id);
    w.var(p.epoch);
    w.var(p.last_seq);
    w.svar(p.last_used_ms);
  }
}

status state_machine::write_stream(wire::writer& w, const std::string& path, const stream_state& s,
                                   const location_predicate* referencable, bool part, bool held) {
  write_stream_head(w, path, s, part);
  const std::size_t count = s.log->record_count();  // the records for_each_record visits
  if (held) w.var(s.log->held_from().value());
  WEIR_ASSERT(held || s.log->held_from() == s.log->base(),
              "{}: bytes only in objects in a version without them", path);
  w.var(count);
  std::optional<std::uint64_t> unwritable;
  s.log->for_each_record([&](const record& r) {
    if (!write_record(w, r, referencable) && !unwritable) unwritable = r.end;
  });
  if (unwritable) {
    WEIR_ASSERT(referencable, "cold record of {} ending at {} has no location", path, *unwritable);
    return make_error(codec_errc::bad_value, "snapshot: record of " + path + " ending at " +
                                                 std::to_string(*unwritable) +
                                                 " is cold and its location is not referencable");
  }
  return {};
}

status state_machine::read_stream(wire::reader& in, std::uint64_t version, std::string& path,
                                  stream_state& s) {
  const bool copied_forks = version == snapshot_version_copied_forks;
  path = in.str();
  s.meta.path = path;
  s.meta.generation = in.var();
  s.meta.content_type = in.str();
  s.meta.json = normalize_content_type(s.meta.content_type) == "application/json";
  s.meta.expiry = in.exp();
  s.requested_expiry = in.exp();
  s.meta.closed = in.boolean();
  s.last_access_ms = in.svar();
  s.soft_deleted = in.boolean();
  s.ref_count = read_u32(in);
  if (version == snapshot_version_part_references || version == snapshot_version_part_held) {
    const std::uint64_t refs = in.var();
    for (std::uint64_t k = 0; k < refs && in.ok(); ++k) {
      const std::uint64_t index = in.var();
      stream_state::origin_reference ref;
      ref.group = read_u32(in);
      ref.fork = in.str();
      ref.since_ms = in.svar();
      if (in.ok() && !s.origins.emplace(index, std::move(ref)).second)
        return bad("fork reference listed twice in " + path);
    }
  }
  s.fork = in.opt<fork_spec>([&] {
    fork_spec f;
    f.source = in.str();
    f.offset = in.opt<stream_offset>([&] { return stream_offset(in.var()); });
    f.sub_offset = in.var();
    f.resolved.point = stream_offset(in.var());
    f.resolved.source_content_type = in.str();
    f.resolved.source_expiry = in.exp();
    f.resolved.retained = in.boolean();
    if (copied_forks) (void)in.boolean();  // "to stitch": every restored fork is linked anew
    if (version == snapshot_version_part_origins || version == snapshot_version_part_references ||
        version == snapshot_version_part_held) {
      f.resolved.origin = in.opt<fork_origin>([&] { return fork_origin{read_u32(in), in.var()}; });
    }
    return f;
  });
  s.closed_by = in.opt<producer_ref>([&] {
    producer_ref p;
    p.id = in.str();
    p.epoch = in.var();
    p.seq = in.var();
    return p;
  });
  s.last_seq = in.opt<std::string>([&] { return in.str(); });
  const std::uint64_t producers = in.var();
  for (std::uint64_t k = 0; k < producers && in.ok(); ++k) {
    std::string id = in.str();
    producer_state p;
    p.epoch = in.var();
    p.last_seq = in.var();
    // Before version 3 no last use was kept: the stream's last access is the closest known.
    p.last_used_ms = version >= snapshot_version ? in.svar() : s.last_access_ms;
    if (!s.producers.emplace(std::move(id), p).second) return bad("producer listed twice in " + path);
  }
  if (!in.ok()) return truncated();
  if (s.fork && s.fork->source == path) return bad("stream " + path + " is a fork of itself");

  // The log, checked exactly as memory_log would assert: own records contiguous from the fork point
  // (0 for a stream that is not a fork). Version 1 listed a fork's inherited records first (contiguous,
  // ending at the fork point); they are checked and dropped: the fork reads them from its source once
  // linked (forks_to_stitch).
  const std::uint64_t base = s.fork ? s.fork->resolved.point.value() : 0;
  const std::uint64_t held_from =
      version == snapshot_version_held || version == snapshot_version_part_held ? in.var() : base;
  if (in.ok() && held_from < base) return bad("records of " + path + " begin before the fork point");
  const std::uint64_t records = in.var();
  auto log = std::make_shared<memory_log>(nullptr, stream_offset(base));
  log->set_name(path);
  if (in.ok()) log->set_held_from(stream_offset(held_from));
  std::optional<std::uint64_t> inherited_end;
  for (std::uint64_t k = 0; k < records && in.ok(); ++k) {
    record r;
    std::string reason;
    if (!read_record(in, r, reason)) return bad(reason + " in " + path);
    if (!in.ok()) break;
    if (copied_forks && r.end <= base && log->record_count() == 0) {
      if (inherited_end && r.begin() != *inherited_end)
        return bad("records of " + path + " are not contiguous");
      inherited_end = r.end;
      continue;
    }
    if (r.begin() != log->tail().value()) {
      return bad(log->record_count() == 0 ? "records of " + path + " do not start at the fork point"
                                          : "records of " + path + " are not contiguous");
    }
    log->append(std::move(r));
  }
  if (!in.ok()) return truncated();
  if (inherited_end && *inherited_end != base) {
    return bad("inherited records of " + path + " do not end at the fork point");
  }
  s.log = std::move(log);
  return {};
}

std::vector<std::byte> state_machine::snapshot() const {
  std::vector<std::uint64_t> segments;
  auto blob = cut().encode(0, segments);
  WEIR_ASSERT(blob.has_value(), "snapshot: {}", blob.err().reason);  // nothing changed since the cut
  return std::move(*blob);
}

snapshot_cut state_machine::cut() const {
  // On the loop, writes held back: no sort here (paths compared 140,000 times for 10,000 streams were
  // most of a cut's time), and every head goes into one buffer.
  snapshot_cut c;
  c.streams_.reserve(streams_.size());
  wire::writer heads;
  heads.reserve(streams_.size() * 96);
  for (const auto& [path, s] : streams_) {
    c.held_ = c.held_ || s.log->held_from() != s.log->base();
    snapshot_cut::stream_entry& e = c.streams_.emplace_back();
    e.head = heads.size();
    write_stream_head(heads, path, s, false);
    e.head_end = heads.size();
    e.log = s.log;
    e.held_from = s.log->held_from().value();
    e.count = s.log->record_count();
    e.front_cuts = s.log->front_cuts();
    c.estimate_ += e.head_end - e.head + 24 + 20 * e.count;
  }
  c.heads_ = heads.take();
  {
    wire::writer w;
    w.raw(snapshot_magic);
    w.var(c.held_ ? snapshot_version_held : snapshot_version);
    w.var(next_generation_);
    w.var(c.streams_.size());
    c.header_ = w.take();
  }
  wire::writer w;
  w.var(held_until_.size());  // in path order (a std::map): the same state gives the same bytes
  for (const auto& [path, until] : held_until_) {
    w.str(path);
    w.svar(until);
  }
  c.trailer_ = w.take();
  c.estimate_ += c.header_.size() + c.trailer_.size();
  return c;
}

result<std::vector<std::byte>> snapshot_cut::encode(std::uint32_t core,
                                                    std::vector<std::uint64_t>& segments) const {
  // At hundreds of thousands of records the blob is tens of MiB. Grown by doubling and then copied
  // whole, it touched about three times its size in fresh memory, and each fresh page is a page fault
  // (with huge pages a 2 MiB zeroing). So the blob is written once, into one buffer sized from an
  // estimate (a short estimate only costs a regrowth), each record's fields in one append.
  std::vector<std::byte> out;
  out.reserve(estimate_);
  auto put = [&out](std::string_view bytes) {
    const auto* first = reinterpret_cast<const std::byte*>(bytes.data());
    out.insert(out.end(), first, first + bytes.size());
  };
  put(header_);
  segments.clear();
  // The streams in path order (the same state gives the same bytes): each head starts with its path.
  std::vector<const stream_entry*> sorted;
  sorted.reserve(streams_.size());
  for (const stream_entry& e : streams_) {
    wire::reader in(std::string_view(heads_).substr(e.head, e.head_end - e.head));
    const std::uint64_t length = in.var();
    const std::size_t at = e.head_end - e.head - in.remaining();
    const_cast<stream_entry&>(e).path = std::string_view(heads_).substr(e.head + at, length);
    sorted.push_back(&e);
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->path < b->path; });
  // The records go in batches, each under its log's lock for a short while: the owner appending to the
  // same stream waits at most one batch.
  constexpr std::size_t batch = 1024;
  wire::writer w;
  auto drain = [&] {
    std::string bytes = w.take();
    put(bytes);
    w = wire::writer(std::move(bytes));  // keeps the capacity
  };
  for (const stream_entry* entry : sorted) {
    const stream_entry& e = *entry;
    put(std::string_view(heads_).substr(e.head, e.head_end - e.head));
    WEIR_ASSERT(held_ || e.held_from == e.log->base().value(),
                "{}: bytes only in objects in a version without them", e.path);
    if (held_) w.var(e.held_from);
    w.var(e.count);
    std::uint64_t last_segment = 0;  // each stream's records start anew
    auto add = [&](const record& r) {
      // Every cold record has a known location (drop_bytes needs one), so every record can be written.
      (void)write_record(w, r, nullptr);
      const disk_location& at = r.data.at;
      if (at.known() && at.core == core && at.segment != last_segment)
        segments.push_back(last_segment = at.segment);
      if (w.size() >= (1u << 20)) drain();  // large inline records: the scratch stays small
    };
    for (std::size_t first = 0; first < e.count; first += batch) {
      if (!e.log->visit_records(e.front_cuts, first, std::min(batch, e.count - first), add)) {
        return make_error(codec_errc::bad_value,
                          "snapshot: records left a stream's log while its checkpoint was encoded");
      }
      drain();
    }
    drain();
  }
  put(trailer_);
  std::sort(segments.begin(), segments.end());
  segments.erase(std::unique(segments.begin(), segments.end()), segments.end());
  return out;
}

status state_machine::restore(std::span<const std::byte> blob) {
  WEIR_ASSERT(streams_.empty() && next_generation_ == 1, "restore into a state machine that holds {} streams",
              streams_.size());
  wire::reader in(std::string_view(reinterpret_cast<const char*>(blob.data()), blob.size()));

  if (blob.size() < snapshot_magic.size()) return truncated();
  if (!in.expect(snapshot_magic)) return bad("not a state machine snapshot (magic)");
  std::uint64_t version = in.var();
  if (!in.ok()) return truncated();
  if (version == snapshot_version_part || version == snapshot_version_part_origins ||
      version == snapshot_version_part_references || version == snapshot_version_part_held) {
    return bad("a part snapshot (version " + std::to_string(version) + "): use restore_part");
  }
  if (version != snapshot_version && version != snapshot_version_held &&
      version != snapshot_version_no_holds && version != snapshot_version_copied_forks) {
    return bad("unknown version " + std::to_string(version));
  }
  const std::uint64_t next_generation = in.var();
  const std::uint64_t count = in.var();
  if (in.ok() && next_generation == 0) return bad("next generation 0");

  string_map<stream_state> streams;
  std::unordered_set<std::uint64_t> generations;
  for (std::uint64_t i = 0; i < count && in.ok(); ++i) {
    std::string path;
    stream_state s;
    if (status st = read_stream(in, version, path, s); !st) return st;
    if (s.meta.generation == 0 || s.meta.generation >= next_generation) {
      return bad("stream " + path + " has generation " + std::to_string(s.meta.generation) +
                 ", next generation is " + std::to_string(next_generation));
    }
    if (!generations.insert(s.meta.generation).second) {
      return bad("generation " + std::to_string(s.meta.generation) + " is listed twice");
    }
    if (!streams.emplace(std::move(path), std::move(s)).second) return bad("a stream is listed twice");
  }
  std::map<std::string, std::int64_t, std::less<>> held;
  if (version >= snapshot_version) {
    const std::uint64_t holds = in.var();
    for (std::uint64_t i = 0; i < holds && in.ok(); ++i) {
      std::string path = in.str();
      const std::int64_t until = in.svar();
      if (in.ok() && !held.emplace(std::move(path), until).second) return bad("a held path is listed twice");
    }
  }
  if (!in.ok()) return truncated();
  if (!in.at_end()) return bad("trailing bytes");

  streams_ = std::move(streams);
  held_until_ = std::move(held);
  for (const auto& [path, until] : held_until_) hold_ends_.emplace(until, path);
  next_generation_ = next_generation;
  for (auto& [path, s] : streams_) {
    if (!s.meta.expiry.none()) expiring_.insert(path);
    by_generation_[s.meta.generation] = &s;
  }
  return {};
}

// Per-part blobs (versions 4 to 6 and 8; written as 6, or 8 when some stream has bytes only in objects).

result<std::vector<std::byte>> state_machine::encode_part(
    const std::vector<const std::pair<const std::string, stream_state>*>& streams,
    const std::map<std::string, std::int64_t, std::less<>>& held, const tombstone_map& tombstones,
    const location_predicate& referencable) {
  wire::writer w;
  bool held_from = false;
  for (const auto* entry : streams)
    held_from = held_from || entry->second.log->held_from() != entry->second.log->base();
  w.raw(snapshot_magic);
  w.var(held_from ? snapshot_version_part_held : snapshot_version_part_references);
  w.var(streams.size());
  for (const auto* entry : streams) {
    if (status st = write_stream(w, entry->first, entry->second, &referencable, true, held_from); !st)
      return st.err();
  }
  w.var(held.size());
  for (const auto& [path, until] : held) {
    w.str(path);
    w.svar(until);
  }
  w.var(tombstones.size());  // by origin (a std::map)
  for (const auto& [origin, t] : tombstones) {
    w.var(origin.first);
    w.var(origin.second);
    w.str(t.fork);
    w.var(t.group);
    w.svar(t.at_ms);
  }
  return to_bytes(w.take());
}

result<std::vector<std::byte>> state_machine::snapshot_part(const path_predicate& in_part,
                                                            const location_predicate& referencable) const {
  std::vector<const std::pair<const std::string, stream_state>*> sorted;
  for (const auto& entry : streams_) {
    if (in_part(entry.first)) sorted.push_back(&entry);
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  std::map<std::string, std::int64_t, std::less<>> held;
  for (const auto& [path, until] : held_until_) {
    if (in_part(path)) held.emplace(path, until);
  }
  tombstone_map tombstones;
  for (const auto& [origin, t] : tombstones_) {
    if (in_part(t.fork)) tombstones.emplace(origin, t);
  }
  return encode_part(sorted, held, tombstones, referencable);
}

result<state_machine::part_content> state_machine::decode_part(std::span<const std::byte> blob,
                                                               const path_predicate* in_part) {
  wire::reader in(std::string_view(reinterpret_cast<const char*>(blob.data()), blob.size()));
  if (blob.size() < snapshot_magic.size()) return truncated();
  if (!in.expect(snapshot_magic)) return bad("not a state machine snapshot (magic)");
  const std::uint64_t version = in.var();
  if (!in.ok()) return truncated();
  if (version != snapshot_version_part && version != snapshot_version_part_origins &&
      version != snapshot_version_part_references && version != snapshot_version_part_held) {
    return bad("version " + std::to_string(version) + " is not a part snapshot (version 4 to 6, 8)");
  }
  part_content out;
  std::unordered_set<std::uint64_t> generations;
  const std::uint64_t count = in.var();
  for (std::uint64_t i = 0; i < count && in.ok(); ++i) {
    std::string path;
    stream_state s;
    if (status st = read_stream(in, version, path, s); !st) return st.err();
    if (s.meta.generation == 0) return bad("stream " + path + " has generation 0");
    if (!generations.insert(s.meta.generation).second) {
      return bad("generation " + std::to_string(s.meta.generation) + " is listed twice");
    }
    if (in_part && !(*in_part)(path)) return bad("stream " + path + " is not in the part");
    if (!out.streams.emplace(std::move(path), std::move(s)).second) return bad("a stream is listed twice");
  }
  const std::uint64_t holds = in.var();
  for (std::uint64_t i = 0; i < holds && in.ok(); ++i) {
    std::string path = in.str();
    const std::int64_t until = in.svar();
    if (!in.ok()) break;
    if (in_part && !(*in_part)(path)) return bad("held path " + path + " is not in the part");
    if (!out.held.emplace(std::move(path), until).second) return bad("a held path is listed twice");
  }
  if (version == snapshot_version_part_references || version == snapshot_version_part_held) {
    const std::uint64_t dead = in.var();
    for (std::uint64_t i = 0; i < dead && in.ok(); ++i) {
      origin_key origin;
      origin.first = read_u32(in);
      origin.second = in.var();
      tombstone t;
      t.fork = in.str();
      t.group = read_u32(in);
      t.at_ms = in.svar();
      if (!in.ok()) break;
      if (in_part && !(*in_part)(t.fork)) return bad("tombstone of " + t.fork + " is not in the part");
      if (!out.tombstones.emplace(origin, std::move(t)).second) return bad("a tombstone is listed twice");
    }
  }
  if (!in.ok()) return truncated();
  if (!in.at_end()) return bad("trailing bytes");
  return out;
}

result<std::vector<std::byte>> state_machine::rewrite_cold_records(
    std::span<const std::byte> blob,
    const std::function<std::optional<error>(const std::string&, record&)>& rewrite) {
  auto decoded = state_machine::decode_part(blob, nullptr);
  if (!decoded) return decoded.err();
  std::vector<const std::pair<const std::string, state_machine::stream_state>*> sorted;
  for (auto& entry : decoded->streams) {
    std::vector<record> records;
    entry.second.log->for_each_record([&](const record& r) { records.push_back(r); });
    auto log = std::make_shared<memory_log>(nullptr, entry.second.log->base());
    log->set_name(entry.first);
    log->set_held_from(entry.second.log->held_from());
    for (record& r : records) {
      if (r.data.cold()) {
        if (auto e = rewrite(entry.first, r)) return *e;
      }
      log->append(std::move(r));
    }
    entry.second.log = std::move(log);
    sorted.push_back(&entry);
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  return state_machine::encode_part(sorted, decoded->held, decoded->tombstones,
                                    [](const disk_location&) { return true; });
}

result<std::vector<part_reference>> snapshot_part_references(std::span<const std::byte> blob) {
  auto decoded = state_machine::decode_part(blob, nullptr);
  if (!decoded) return decoded.err();
  std::vector<const std::pair<const std::string, state_machine::stream_state>*> sorted;
  for (const auto& entry : decoded->streams) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  std::vector<part_reference> out;
  for (const auto* entry : sorted) {
    entry->second.log->for_each_record([&](const record& r) {
      if (r.data.cold()) out.push_back(part_reference{r.data.at, r.data.begin, r.data.size});
    });
  }
  return out;
}

result<std::vector<std::byte>> relocate_snapshot_part(
    std::span<const std::byte> blob,
    const std::function<std::optional<part_reference>(const part_reference&)>& to) {
  return state_machine::rewrite_cold_records(
      blob, [&](const std::string& path, record& r) -> std::optional<error> {
        const part_reference from{r.data.at, r.data.begin, r.data.size};
        const std::optional<part_reference> moved = to(from);
        if (!moved) {
          return bad("no copy of the record at segment " + std::to_string(from.at.segment) + " offset " +
                     std::to_string(from.at.offset) + " of " + path);
        }
        if (moved->size != r.data.size || !moved->at.known()) {
          return bad("record of " + path + " relocated to another size or nowhere");
        }
        r.data.at = moved->at;
        r.data.begin = moved->begin;
        return std::nullopt;
      });
}

namespace {

// `log` (of `path`) with its records ending at or before `forget_before(path)` forgotten and every other
// record on disk read with `read` and inlined (inline_snapshot).
result<std::shared_ptr<memory_log>> inlined_log(
    const std::string& path, const std::shared_ptr<memory_log>& log,
    const std::function<std::optional<stream_offset>(const std::string& path)>& forget_before,
    const std::function<result<chunk>(const part_reference&)>& read) {
  if (auto pos = forget_before(path)) log->forget_before(*pos);
  std::vector<record> records;
  log->for_each_record([&](const record& r) { records.push_back(r); });
  auto out = std::make_shared<memory_log>(nullptr, log->base());
  out->set_name(path);
  out->set_held_from(log->held_from());
  for (record& r : records) {
    if (r.data.cold()) {
      const part_reference ref{r.data.at, r.data.begin, r.data.size};
      auto bytes = read(ref);
      if (!bytes) {
        error e = bytes.err();
        e.reason = "reading the record of " + path + " ending at " + std::to_string(r.end) + ": " + e.reason;
        return e;
      }
      if (!*bytes || (*bytes)->size() != r.data.size) {
        return bad("the record of " + path + " ending at " + std::to_string(r.end) + " read back short");
      }
      r.data.buf = std::move(*bytes);
      r.data.begin = 0;
    }
    r.data.at = {};  // inlined: no reference to this node's disk
    out->append(std::move(r));
  }
  return out;
}

}  // namespace

result<std::vector<std::byte>> inline_snapshot(
    std::span<const std::byte> blob,
    const std::function<std::optional<stream_offset>(const std::string& path)>& forget_before,
    const std::function<result<chunk>(const part_reference&)>& read) {
  state_machine sm;
  if (status st = sm.restore(blob); !st) return st.err();
  for (auto& [path, s] : sm.streams_) {
    auto log = inlined_log(path, s.log, forget_before, read);
    if (!log) return log.err();
    s.log = std::move(*log);
  }
  return sm.snapshot();
}

result<std::vector<std::byte>> inline_snapshot_part(
    std::span<const std::byte> blob,
    const std::function<std::optional<stream_offset>(const std::string& path)>& forget_before,
    const std::function<result<chunk>(const part_reference&)>& read) {
  auto decoded = state_machine::decode_part(blob, nullptr);
  if (!decoded) return decoded.err();
  std::vector<const std::pair<const std::string, state_machine::stream_state>*> sorted;
  for (auto& entry : decoded->streams) {
    auto log = inlined_log(entry.first, entry.second.log, forget_before, read);
    if (!log) return log.err();
    entry.second.log = std::move(*log);
    sorted.push_back(&entry);
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  return state_machine::encode_part(sorted, decoded->held, decoded->tombstones,
                                    [](const disk_location&) { return true; });
}

}  // namespace weir::streams
