#include "streams/state_machine.h"

#include <algorithm>
#include <cctype>

#include "base/assert.h"

namespace weir::streams {

namespace {
constexpr std::string_view default_content_type = "application/octet-stream";

outcome fail(errc code) {
  outcome o;
  o.code = code;
  return o;
}
}  // namespace

namespace {
std::string_view media_type_of(std::string_view ct) {
  auto semi = ct.find(';');
  if (semi != std::string_view::npos) ct = ct.substr(0, semi);
  while (!ct.empty() && (ct.front() == ' ' || ct.front() == '\t')) ct.remove_prefix(1);
  while (!ct.empty() && (ct.back() == ' ' || ct.back() == '\t')) ct.remove_suffix(1);
  return ct;
}
char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c;
}
}  // namespace

std::string normalize_content_type(std::string_view ct) {
  std::string out(media_type_of(ct));
  for (char& c : out) c = ascii_lower(c);
  return out;
}

bool same_media_type(std::string_view a, std::string_view b) {
  a = media_type_of(a);
  b = media_type_of(b);
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

state_machine::state_machine() = default;
state_machine::~state_machine() = default;

outcome state_machine::apply(const command& c) {
  return std::visit(
      [this](const auto& v) -> outcome {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, create_command>) return create(v);
        if constexpr (std::is_same_v<T, append_command>) return append(v);
        if constexpr (std::is_same_v<T, delete_command>) return remove(v);
        if constexpr (std::is_same_v<T, touch_command>) return touch(v);
        if constexpr (std::is_same_v<T, expire_command>) return expire(v);
        if constexpr (std::is_same_v<T, fork_retain_command>) return fork_retain(v);
        if constexpr (std::is_same_v<T, fork_release_command>) return fork_release(v);
        if constexpr (std::is_same_v<T, fork_tombstone_command>) return fork_tombstone(v);
      },
      c);
}

std::optional<std::int64_t> state_machine::expiry_of(const stream_state& s) {
  const expiry_config& e = s.meta.expiry;
  std::optional<std::int64_t> at = e.expires_at_ms;
  if (e.ttl_seconds) {
    const std::int64_t idle = s.last_access_ms + static_cast<std::int64_t>(*e.ttl_seconds) * 1000;
    at = at ? std::min(*at, idle) : idle;
  }
  return at;
}

bool state_machine::is_expired(const stream_state& s, std::int64_t now_ms) {
  const std::optional<std::int64_t> at = expiry_of(s);
  return at && now_ms >= *at;
}

stream_meta state_machine::meta_of(const stream_state& s) const {
  stream_meta m = s.meta;
  m.tail = s.log->tail();
  return m;
}

void state_machine::erase(const std::string& path_ref, outcome& out) {
  std::string path = path_ref;  // the reference may point into the entry being erased
  auto it = streams_.find(path);
  WEIR_ASSERT(it != streams_.end(), "erase of unknown stream {}", path);
  if (it->second.fork) out.release.push_back({it->second.fork->source, it->second.fork->resolved.origin});
  expiring_.erase(path);
  by_generation_.erase(it->second.meta.generation);
  streams_.erase(it);
  ++removals_;
  out.removed.push_back(path);
  out.mutated = true;
}

state_machine::stream_state* state_machine::resolve(const std::string& path, std::int64_t now_ms,
                                                    outcome& out) {
  auto it = streams_.find(path);
  if (it == streams_.end()) return nullptr;
  stream_state& s = it->second;
  if (!s.soft_deleted && is_expired(s, now_ms)) {
    // An expired stream that forks still read from is kept, soft-deleted (PROTOCOL.md 4.2).
    if (s.references() > 0) {
      s.soft_deleted = true;
      out.mutated = true;
      out.removed.push_back(path);
      return &s;
    }
    erase(path, out);
    return nullptr;
  }
  return &s;
}

state_machine::stream_state* state_machine::resolve_live(const std::string& path, std::int64_t now_ms,
                                                         outcome& out, errc missing, errc gone) {
  stream_state* s = resolve(path, now_ms, out);
  if (!s) {
    out.code = missing;
    return nullptr;
  }
  if (s->soft_deleted) {
    out.code = gone;
    return nullptr;
  }
  return s;
}

void state_machine::release_holds(std::int64_t now_ms) {
  while (!hold_ends_.empty() && hold_ends_.begin()->first <= now_ms) {
    auto it = held_until_.find(hold_ends_.begin()->second);
    if (it != held_until_.end() && it->second == hold_ends_.begin()->first) held_until_.erase(it);
    hold_ends_.erase(hold_ends_.begin());
  }
}

outcome state_machine::create(const create_command& c) {
  outcome out;
  release_holds(c.now_ms);
  auto give_back_fork = [&](outcome& o) {
    // A create that does not use its fork resolution must return the source reference it holds.
    if (c.fork && c.fork->resolved.retained) o.release.push_back({c.fork->source, c.fork->resolved.origin});
  };
  if (auto held = held_until_.find(c.path); held != held_until_.end()) {
    // PROTOCOL.md 1: caches keyed by URL and offset would serve the deleted stream's bytes for the new one.
    give_back_fork(out);
    out.code = errc::path_held;
    return out;
  }
  if (c.fork && c.fork->resolved.origin &&
      tombstones_.contains({c.fork->resolved.origin->group, c.fork->resolved.origin->index})) {
    // The fork sweep found no fork with this origin and recorded it dead before releasing its reference
    // (fork_tombstone): a create of it that commits this late must not read a source it no longer holds.
    give_back_fork(out);
    out.code = errc::source_gone;
    return out;
  }
  stream_state* existing = resolve(c.path, c.now_ms, out);
  if (existing) {
    out.meta = meta_of(*existing);
    bool matches = !existing->soft_deleted;
    if (matches) {
      std::string want_ct = normalize_content_type(c.content_type);
      if (want_ct.empty() && !c.fork) want_ct = default_content_type;
      if (!want_ct.empty() && want_ct != normalize_content_type(existing->meta.content_type)) matches = false;
      if (!(c.expiry == existing->requested_expiry)) matches = false;
      if (c.closed != existing->meta.closed) matches = false;
      if (c.fork.has_value() != existing->fork.has_value()) matches = false;
      if (matches && c.fork) {
        const fork_spec& have = *existing->fork;
        if (c.fork->source != have.source) matches = false;
        if (c.fork->offset && *c.fork->offset != have.resolved.point) matches = false;
        if (c.fork->sub_offset != have.sub_offset) matches = false;
      }
    }
    give_back_fork(out);
    out.code = existing->soft_deleted ? errc::deleted_with_forks : matches ? errc::ok : errc::config_mismatch;
    return out;
  }

  stream_state s;
  s.meta.path = c.path;
  s.meta.content_type = c.content_type;
  if (c.fork && s.meta.content_type.empty()) s.meta.content_type = c.fork->resolved.source_content_type;
  if (s.meta.content_type.empty()) s.meta.content_type = default_content_type;
  s.meta.json = normalize_content_type(s.meta.content_type) == "application/json";
  s.requested_expiry = c.expiry;
  s.meta.expiry = c.expiry;
  if (c.fork && c.expiry.none()) s.meta.expiry = c.fork->resolved.source_expiry;  // PROTOCOL.md 4.2 table
  s.last_access_ms = c.now_ms;
  s.meta.closed = c.closed;

  if (s.meta.json && c.initial.json_invalid) {
    outcome o = fail(errc::invalid_json);
    give_back_fork(o);
    return o;
  }
  // Only a create that succeeds takes a generation: a rejected one is not logged, so a replay would
  // not count it, and generations (ETags) must come out the same after a restart.
  s.meta.generation = next_generation_++;
  if (c.fork) {
    const fork_resolution& res = c.fork->resolved;
    // The fork reads its records before the fork point from the source's log. On replay the log does
    // not carry that link: the caller gives it later (forks_to_stitch).
    s.log = std::make_shared<memory_log>(res.source_log, res.point);
    s.log->set_name(c.path);
    fork_spec origin = *c.fork;
    origin.resolved.source_log.reset();
    origin.resolved.prefix = payload{};  // its bytes are the fork's first record; not needed again
    s.fork = std::move(origin);
  } else {
    s.log = std::make_shared<memory_log>();
    s.log->set_name(c.path);
  }
  auto add = [&](const payload& p) {
    if (p.empty()) return;
    record r;
    r.data = chunk_slice{p.bytes, 0, static_cast<std::uint32_t>(p.size())};
    r.end = s.log->tail().value() + p.size();
    r.messages = p.messages;
    s.log->append(std::move(r));
  };
  if (c.fork) add(c.fork->resolved.prefix);
  add(c.initial);

  auto [it, inserted] = streams_.emplace(c.path, std::move(s));
  WEIR_ASSERT(inserted, "stream {} created twice", c.path);
  by_generation_[it->second.meta.generation] = &it->second;
  if (!it->second.meta.expiry.none()) expiring_.insert(c.path);
  out.code = errc::ok;
  out.mutated = true;
  out.created = true;
  out.appended = !c.initial.empty();
  out.meta = meta_of(it->second);
  return out;
}

outcome state_machine::append(const append_command& c) {
  outcome out;
  stream_state* s = resolve_live(c.path, c.now_ms, out);
  if (!s) return out;
  auto finish = [&](errc code) {
    out.code = code;
    out.meta = meta_of(*s);
    return out;
  };
  const bool close_only = c.close && c.body.empty();

  // PROTOCOL.md 5.2 error precedence: closed first, then content type, then sequence.
  if (s->meta.closed) {
    if (c.producer && s->closed_by && *s->closed_by == *c.producer) {
      // 5.2.1: a retry of the request that closed the stream is a duplicate.
      out.duplicate = true;
      out.producer_epoch = c.producer->epoch;
      out.producer_seq = c.producer->seq;
      return finish(errc::ok);
    }
    if (close_only && !c.producer) {
      s->last_access_ms = c.now_ms;  // a close is a write: renews the TTL
      out.mutated = s->meta.expiry.ttl_seconds.has_value();
      return finish(errc::ok);  // close is idempotent (5.3)
    }
    return finish(errc::closed);
  }
  if (!close_only && c.content_type && !same_media_type(*c.content_type, s->meta.content_type)) {
    return finish(errc::content_type_mismatch);
  }

  // 5.2.1 validation, without mutating until the append is known to succeed.
  std::optional<producer_state> next_producer;
  if (c.producer) {
    const producer_ref& p = *c.producer;
    auto it = s->producers.find(p.id);
    if (it != s->producers.end() && c.now_ms - it->second.last_used_ms >= producer_idle_ms) {
      s->producers.erase(it);  // idle past its TTL: a new producer from now on
      it = s->producers.end();
      out.mutated = true;
    }
    if (it == s->producers.end()) {
      if (p.seq != 0) {
        out.expected_seq = 0;
        out.received_seq = p.seq;
        return finish(errc::seq_gap);
      }
      next_producer = producer_state{p.epoch, 0, c.now_ms};
    } else {
      const producer_state& st = it->second;
      if (p.epoch < st.epoch) {
        out.producer_epoch = st.epoch;
        return finish(errc::stale_epoch);
      }
      if (p.epoch > st.epoch) {
        if (p.seq != 0) return finish(errc::epoch_needs_seq_zero);
        next_producer = producer_state{p.epoch, 0, c.now_ms};
      } else if (p.seq <= st.last_seq) {
        out.duplicate = true;
        out.producer_epoch = p.epoch;
        out.producer_seq = st.last_seq;
        return finish(errc::ok);
      } else if (p.seq == st.last_seq + 1) {
        next_producer = producer_state{p.epoch, p.seq, c.now_ms};
      } else {
        out.expected_seq = st.last_seq + 1;
        out.received_seq = p.seq;
        return finish(errc::seq_gap);
      }
    }
  }
  if (c.stream_seq && s->last_seq && *c.stream_seq <= *s->last_seq) return finish(errc::seq_regression);
  if (!close_only && s->meta.json) {
    if (c.body.json_invalid) return finish(errc::invalid_json);
    if (c.body.json_empty_array) return finish(errc::empty_json_array);
  }

  // Commit: data, producer state, Stream-Seq, closure, TTL renewal, in one step.
  if (!c.body.empty()) {
    record r;
    r.data = chunk_slice{c.body.bytes, 0, static_cast<std::uint32_t>(c.body.size())};
    r.end = s->log->tail().value() + c.body.size();
    r.messages = c.body.messages;
    s->log->append(std::move(r));
    out.appended = true;
  }
  if (c.producer) {
    if (s->producers.size() >= max_producers_per_stream && !s->producers.count(c.producer->id)) {
      // Full: forget the least recently used producer (a scan, only for a new producer of a full stream).
      auto lru = std::min_element(s->producers.begin(), s->producers.end(), [](const auto& a, const auto& b) {
        return a.second.last_used_ms < b.second.last_used_ms;
      });
      s->producers.erase(lru);
    }
    s->producers[c.producer->id] = *next_producer;
    out.producer_epoch = c.producer->epoch;
    out.producer_seq = c.producer->seq;
  }
  if (c.stream_seq) s->last_seq = *c.stream_seq;
  if (c.close) {
    s->meta.closed = true;
    s->closed_by = c.producer;
    out.closed_now = true;
  }
  s->last_access_ms = c.now_ms;
  out.mutated = true;
  return finish(errc::ok);
}

outcome state_machine::remove(const delete_command& c) {
  outcome out;
  // PROTOCOL.md 5.4: deleting a soft-deleted stream is 410 (gone).
  stream_state* s = resolve_live(c.path, c.now_ms, out);
  if (!s) return out;
  release_holds(c.now_ms);
  if (c.hold_ms > 0) {
    const std::int64_t until = c.now_ms + c.hold_ms;
    auto [it, fresh] = held_until_.try_emplace(c.path, until);
    if (!fresh) {
      hold_ends_.erase({it->second, c.path});
      it->second = until;
    }
    hold_ends_.emplace(until, c.path);
  }
  if (s->references() > 0) {
    s->soft_deleted = true;
    out.mutated = true;
    out.removed.push_back(c.path);
    return out;
  }
  erase(c.path, out);
  return out;
}

outcome state_machine::touch(const touch_command& c) {
  outcome out;
  stream_state* s = resolve_live(c.path, c.now_ms, out);
  if (!s) return out;
  s->last_access_ms = c.now_ms;
  out.mutated = out.mutated || s->meta.expiry.ttl_seconds.has_value();
  out.meta = meta_of(*s);
  return out;
}

outcome state_machine::expire(const expire_command& c) {
  outcome out;
  if (stream_state* s = resolve_live(c.path, c.now_ms, out)) out.meta = meta_of(*s);
  return out;
}

outcome state_machine::fork_retain(const fork_retain_command& c) {
  outcome out;
  stream_state* s = resolve_live(c.source, c.now_ms, out, errc::source_not_found, errc::source_gone);
  if (!s) return out;
  if (!c.content_type.empty() &&
      normalize_content_type(c.content_type) != normalize_content_type(s->meta.content_type)) {
    out.code = errc::content_type_mismatch;
    return out;
  }
  stream_offset tail = s->log->tail();
  stream_offset point = c.offset.value_or(tail);
  std::uint64_t limit = tail.value();  // where this stream stops seeing the holder's bytes
  const memory_log* holder = s->log->holder_of(point.value(), limit);  // whose own bytes hold the point
  // The record the retain carries as beginning at the point, seen through this stream (cut at `limit`).
  auto carried = [&]() -> std::optional<record> {
    if (!c.point_record || c.point_record->end <= point ||
        c.point_record->end.value() - point.value() > UINT32_MAX)
      return std::nullopt;
    record r;
    r.end = std::min(c.point_record->end.value(), limit);
    r.messages = c.point_record->messages;
    r.data.size = static_cast<std::uint32_t>(r.end - point.value());
    return r;
  };
  std::optional<record> taken;     // the carried record, where it decides
  std::optional<cold_point> cold;  // set_cold_boundary's answer
  bool boundary = false;
  const bool record_decides = c.record_decides && point < tail;
  if (record_decides) {
    // The holder applies its commands in another log (fork_retain_command::record_decides): the carried
    // record alone says where a record begins, apart from the holder's own start (a fork point).
    taken = carried();
    boundary = point == holder->base() || taken;
  } else {
    if (cold_boundary_ && point < tail) cold = cold_boundary_(holder->name(), point);
    // The carried record (the proposer read it from an object's record table or its own records), if it
    // lies in the bytes in objects.
    if (cold && c.point_record && c.point_record->end <= cold->cold_end) taken = carried();
    boundary = cold ? cold->extent_start || taken : s->log->is_boundary(point);
  }
  if (point > tail || (s->meta.json && !boundary)) {
    out.code = errc::bad_fork_offset;
    return out;
  }
  if (c.sub_offset > 0 && (cold || record_decides)) {
    std::uint64_t extent = taken ? (s->meta.json ? taken->messages : taken->data.size) : 0;
    if (!taken || c.sub_offset > extent) {
      out.code = errc::bad_sub_offset;
      return out;
    }
    // The cut record's bytes: this replica's own copy while it keeps the record (only the node that
    // proposed the retain reads them, and the bytes are the same wherever they come from), else the
    // bucket's.
    std::optional<record> own = record_decides ? s->log->record_at(point) : std::nullopt;
    if (own && own->end == taken->end) {
      out.sub_record = std::move(own);
    } else {
      out.sub_record_in_objects = object_span{holder->name(), point, stream_offset(taken->end)};
      out.sub_record = std::move(taken);
    }
  } else if (c.sub_offset > 0) {
    std::optional<record> r = s->log->record_at(point);
    std::uint64_t extent = r ? (s->meta.json ? r->messages : r->data.size) : 0;
    if (!r || c.sub_offset > extent) {
      out.code = errc::bad_sub_offset;
      return out;
    }
    out.sub_record = std::move(r);
  }
  fork_resolution res;
  res.point = point;
  res.source_log = s->log;  // shared, not copied: O(1) in the source's size
  res.source_content_type = s->meta.content_type;
  res.source_expiry = s->meta.expiry;
  if (applying_) {
    // A cluster's reference, named by the retain's place (unique per fork): the fork's create carries it,
    // and the release that gives it back names it.
    s->origins[applying_->index] = stream_state::origin_reference{applying_->group, c.fork, c.now_ms};
    res.origin = applying_;
  } else {
    s->ref_count++;
  }
  out.resolution = std::move(res);
  out.mutated = true;
  out.meta = meta_of(*s);
  return out;
}

outcome state_machine::fork_release(const fork_release_command& c) {
  outcome out;
  auto it = streams_.find(c.source);
  if (it == streams_.end()) return out;  // already gone: nothing holds the reference any more
  stream_state& s = it->second;
  if (c.origin) {
    // By origin: idempotent. Not held (given back already, or counted anonymously by a snapshot written
    // before origins were kept): nothing changes.
    auto ref = s.origins.find(c.origin->index);
    if (ref == s.origins.end() || ref->second.group != c.origin->group) return out;
    s.origins.erase(ref);
  } else if (s.ref_count > 0) {
    s.ref_count--;
  } else if (!s.origins.empty()) {
    // A cluster's fork created without an origin whose retain was applied with one (a log written
    // before creates carried origins, replayed): the count goes down as it did before.
    auto ref =
        std::find_if(s.origins.begin(), s.origins.end(), [](const auto& r) { return r.second.fork.empty(); });
    s.origins.erase(ref != s.origins.end() ? ref : s.origins.begin());
  }
  out.mutated = true;
  if (s.references() == 0 && s.soft_deleted) erase(c.source, out);  // cascading GC (PROTOCOL.md 4.2)
  return out;
}

outcome state_machine::fork_tombstone(const fork_tombstone_command& c) {
  outcome out;
  // Tombstones of the same group, older than the horizon: no create can still bring their forks back.
  // Only this group's: its log orders them the same on every node.
  for (auto it = tombstones_.begin(); it != tombstones_.end();) {
    if (it->second.group == c.group && it->second.at_ms + fork_tombstone_horizon_ms <= c.now_ms) {
      it = tombstones_.erase(it);
      out.mutated = true;
    } else {
      ++it;
    }
  }
  if (fork_exists(c.path, c.origin)) {
    out.fork_exists = true;  // created after the sweep looked: it keeps its reference
    return out;
  }
  tombstones_[{c.origin.group, c.origin.index}] = tombstone{c.path, c.group, c.now_ms};
  out.mutated = true;
  return out;
}

std::vector<state_machine::fork_link> state_machine::forks() const {
  std::vector<fork_link> out;
  for (const auto& [path, s] : streams_) {
    if (s.fork) out.push_back({path, s.fork->source, s.fork->resolved.point});
  }
  return out;
}

std::optional<state_machine::fork_wait> state_machine::fork_wait_of(std::string_view path) const {
  auto it = streams_.find(path);
  if (it == streams_.end() || !it->second.fork || !it->second.fork->resolved.origin) return std::nullopt;
  return fork_wait{it->second.fork->source, *it->second.fork->resolved.origin};
}

std::vector<state_machine::fork_link> state_machine::forks_to_stitch() const {
  std::vector<fork_link> out;
  for (const auto& [path, s] : streams_) {
    if (s.fork && s.fork->resolved.point.value() > 0 && !s.log->source()) {
      out.push_back({path, s.fork->source, s.fork->resolved.point});
    }
  }
  return out;
}

std::shared_ptr<const memory_log> state_machine::log_of(const std::string& path) const {
  auto it = streams_.find(path);
  if (it == streams_.end()) return nullptr;
  return it->second.log;
}

void state_machine::stitch_fork(const std::string& path, std::shared_ptr<const memory_log> source) {
  auto it = streams_.find(path);
  WEIR_ASSERT(it != streams_.end() && it->second.fork, "stitch of unknown fork {}", path);
  it->second.log->link_source(std::move(source));
}

bool state_machine::awaits_link(std::string_view path, std::string_view source) const {
  auto it = streams_.find(path);
  return it != streams_.end() && it->second.fork && it->second.fork->source == source &&
         it->second.fork->resolved.point.value() > 0 && !it->second.log->source();
}

void state_machine::adopt_logs(state_machine& old) {
  for (auto& [path, s] : streams_) {
    auto it = old.streams_.find(path);
    if (it == old.streams_.end() || it->second.meta.generation != s.meta.generation) continue;
    std::shared_ptr<memory_log> kept = it->second.log;
    kept->take_records(*s.log);
    s.log = std::move(kept);
  }
}

std::size_t state_machine::records_held(std::string_view path) const {
  auto it = streams_.find(path);
  return it == streams_.end() ? 0 : it->second.log->record_count();
}

state_machine::stream_state* state_machine::find_generation(std::uint64_t generation) {
  auto it = by_generation_.find(generation);
  return it == by_generation_.end() ? nullptr : it->second;
}

bool state_machine::locate(std::uint64_t generation, std::uint64_t end, const disk_location& at) {
  WEIR_ASSERT(at.known(), "locate of generation {} at {} with an unknown location", generation, end);
  stream_state* s = find_generation(generation);
  return s && s->log->set_location(end, at);
}

std::size_t state_machine::evict(std::uint64_t generation, std::uint64_t end) {
  stream_state* s = find_generation(generation);
  // Readers in flight (on any core) hold their own reference to the chunk.
  return s ? s->log->drop_bytes(end) : 0;
}

std::vector<std::uint64_t> state_machine::referenced_segments(std::uint32_t core,
                                                              const path_predicate& in_part) const {
  // Soft-deleted streams are included: they keep their records while forks reference them (a fork's
  // inherited records are its source's, listed there).
  std::unordered_set<std::uint64_t> seen;
  for (const auto& [path, s] : streams_) {
    if (in_part && !in_part(path)) continue;
    s.log->for_each_record([&](const record& r) {
      if (r.data.at.known() && r.data.at.core == core) seen.insert(r.data.at.segment);
    });
  }
  std::vector<std::uint64_t> out(seen.begin(), seen.end());
  std::sort(out.begin(), out.end());
  return out;
}

void state_machine::for_each_unlocated(
    const std::function<void(std::string_view path, std::uint64_t generation, const record& r)>& fn) const {
  for (const auto& entry : streams_) {
    // Not a structured binding: clang (the fuzz build) does not let a lambda capture one before C++20 P1091.
    const std::string& path = entry.first;
    const std::uint64_t generation = entry.second.meta.generation;
    entry.second.log->for_each_record([&](const record& r) {
      if (!r.data.cold() && !r.data.at.known()) fn(path, generation, r);
    });
  }
}

std::vector<std::pair<std::string, std::uint32_t>> state_machine::ref_counts() const {
  std::vector<std::pair<std::string, std::uint32_t>> out;
  for (const auto& [path, s] : streams_) {
    if (s.references() > 0) out.emplace_back(path, static_cast<std::uint32_t>(s.references()));
  }
  return out;
}

std::vector<state_machine::held_reference> state_machine::references_by_origin(
    const path_predicate& in_sources, std::int64_t taken_by_ms) const {
  std::vector<held_reference> out;
  for (const auto& [path, s] : streams_) {
    if (s.origins.empty() || !in_sources(path)) continue;
    for (const auto& [index, ref] : s.origins) {
      if (ref.fork.empty() || ref.since_ms > taken_by_ms) continue;
      out.push_back(held_reference{path, fork_origin{ref.group, index}, ref.fork, ref.since_ms});
    }
  }
  std::sort(out.begin(), out.end(), [](const held_reference& a, const held_reference& b) {
    return a.source != b.source ? a.source < b.source : a.origin.index < b.origin.index;
  });
  return out;
}

bool state_machine::holds_reference(std::string_view source, const fork_origin& origin) const {
  auto it = streams_.find(source);
  if (it == streams_.end()) return false;
  auto ref = it->second.origins.find(origin.index);
  return ref != it->second.origins.end() && ref->second.group == origin.group;
}

bool state_machine::fork_exists(std::string_view path, const fork_origin& origin) const {
  auto it = streams_.find(path);
  return it != streams_.end() && it->second.fork && it->second.fork->resolved.origin == origin;
}

read_result state_machine::read(std::string_view path, std::optional<stream_offset> from,
                                std::size_t max_bytes) const {
  read_result r;
  auto it = streams_.find(path);
  if (it == streams_.end()) {
    r.code = errc::not_found;
    return r;
  }
  const stream_state& s = it->second;
  if (s.soft_deleted) {
    r.code = errc::gone;
    return r;
  }
  r.meta = meta_of(s);
  r.plan = s.log->read(from.value_or(stream_offset(0)), max_bytes, s.meta.json);
  return r;
}

read_result state_machine::head(std::string_view path, std::int64_t now_ms) const {
  read_result r;
  auto it = streams_.find(path);
  if (it == streams_.end() ||
      (!it->second.soft_deleted && is_expired(it->second, now_ms) && it->second.references() == 0)) {
    r.code = errc::not_found;
    return r;
  }
  if (!is_visible(it->second, now_ms)) {
    r.code = errc::gone;
    return r;
  }
  r.meta = meta_of(it->second);
  return r;
}

state_machine::position state_machine::position_of(std::string_view path, std::int64_t now_ms) const {
  position p;
  auto it = streams_.find(path);
  if (it == streams_.end() || !is_visible(it->second, now_ms)) return p;
  p.exists = true;
  p.tail = it->second.log->tail();
  p.closed = it->second.meta.closed;
  p.expires_ms = expiry_of(it->second).value_or(0);
  return p;
}

std::vector<stream_meta> state_machine::list(std::string_view prefix, std::int64_t now_ms) const {
  std::vector<stream_meta> out;
  for (const auto& [path, s] : streams_) {
    if (!is_visible(s, now_ms)) continue;
    if (path.compare(0, prefix.size(), prefix) != 0) continue;
    out.push_back(meta_of(s));
  }
  std::sort(out.begin(), out.end(),
            [](const stream_meta& a, const stream_meta& b) { return a.path < b.path; });
  return out;
}

std::vector<std::string> state_machine::expired(std::int64_t now_ms) const {
  std::vector<std::string> out;
  for (const std::string& path : expiring_) {
    auto it = streams_.find(path);
    WEIR_ASSERT(it != streams_.end(), "expiring stream {} is not a stream", path);
    if (!it->second.soft_deleted && is_expired(it->second, now_ms)) out.push_back(path);
  }
  return out;
}

}  // namespace weir::streams
