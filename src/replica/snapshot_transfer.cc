#include "replica/snapshot_transfer.h"

#include <algorithm>
#include <deque>
#include <set>

#include <fmt/format.h>

#include "base/log.h"
#include "replica/group_snapshot.h"
#include "streams/state_machine.h"

namespace weir::replica {

namespace {

using raft::wire::record_key;

record_key key_of(const streams::part_reference& r) {
  return record_key{r.at.segment, r.at.offset, r.at.core, r.at.data_offset, r.begin, r.size};
}

constexpr std::chrono::milliseconds sweep_every{1000};
// At most this many records held are named in the answer to an opening chunk (32 bytes each): a
// record held and not named is sent again, and its copy here serves (take_piece).
constexpr std::size_t max_held_named = 16384;
// A delivered transfer keeps its pins this long at most when no restore of its group follows (libraft
// refused the install, or the group stopped): the records are then garbage for the next reclaim.
constexpr std::int64_t delivered_keep_ms = 60'000;

// The streams part of libraft's snapshot buffer `data`, and where the group snapshot starts in it.
struct split_snapshot {
  std::size_t offset = 0;
  group_snapshot_view parts;
};
result<split_snapshot> split(const snapshot_transfers::ports& p, std::span<const std::byte> data) {
  const std::optional<std::size_t> off = p.state_offset(data);
  if (!off || *off > data.size()) return make_error(storage::errc::corruption, "snapshot buffer malformed");
  auto parts = decode_group_snapshot(data.subspan(*off));
  if (!parts) return parts.err();
  return split_snapshot{*off, *parts};
}

}  // namespace

struct snapshot_transfers::outgoing {
  std::uint64_t id = 0;
  install inst;
  std::vector<record_key> keys;  // distinct, in the snapshot's order
  bool opened = false;           // the receiver answered chunk 0 (where to resume)
  std::set<record_key> held;     // records the receiver holds (named in its answer): not sent
  std::size_t next_key = 0;      // the next piece to read starts in keys[next_key] ...
  std::uint32_t key_offset = 0;  // ... at this offset of its slice
  std::uint32_t next_seq = 0;    // of the next chunk to read
  std::uint32_t next_send = 0;   // chunks are sent in order: the next one
  std::uint32_t acked = 0;       // chunks [0, acked) were acknowledged
  struct read_chunk {
    std::vector<piece_read> pieces;
    std::vector<std::string> bytes;
  };
  std::map<std::uint32_t, read_chunk> ready;  // read, waiting for an earlier one to be sent first
  std::uint64_t bytes = 0;
  std::int64_t last_news_ms = 0;

  // Moves past the records the receiver holds (between records only): the next record to read.
  std::size_t skip_held() {
    while (key_offset == 0 && next_key < keys.size() && held.contains(keys[next_key])) ++next_key;
    return next_key;
  }
};

struct snapshot_transfers::incoming {
  key k;                       // sender, group
  std::uint64_t id = 0;        // the sender's transfer feeding it (0 while kept)
  std::uint64_t pin = 0;       // this node's id of its copies' pins (kept across a resume)
  raft::log_index last_index;  // the snapshot it carries
  raft::term_id last_term;
  bool kept = false;  // dropped: its progress waits for a transfer of this or another snapshot
  std::uint32_t next_seq = 0;
  std::optional<record_key> assembling;  // the record whose pieces are arriving
  std::string buf;
  // Records of this snapshot whose bytes arrived whole, in arrival order (the sender's order, less the
  // records it skipped), and those written, of every snapshot of this sender that fed it: sender's
  // record -> its copy here. The first records of `order` that are in `copies` are where a resume of
  // the same snapshot starts; the other copies are named for the sender to skip.
  std::vector<record_key> order;
  std::map<record_key, streams::part_reference> copies;
  std::uint64_t copied_bytes = 0;
  std::size_t writes_pending = 0;  // of every transfer that fed it
  struct chunk_writes {
    std::uint32_t seq;
    std::size_t pending;
  };
  std::deque<chunk_writes> unacked;               // in sequence order (this transfer's)
  std::optional<streams::disk_location> last_at;  // the latest copy written (a sync must cover it)
  std::optional<install> inst;
  bool waiting_sync = false;
  std::uint64_t sync_wait = 0;  // names the data-log sync awaited (unique on the node)
  std::uint64_t bytes = 0;      // record bytes received, every feed
  std::int64_t last_news_ms = 0;

  // How many of the first records (the sender's order) are written here.
  std::uint32_t held() const {
    std::uint32_t n = 0;
    while (n < order.size() && copies.contains(order[n])) ++n;
    return n;
  }
};

snapshot_transfers::snapshot_transfers(raft::executor& ex, ports p, options o)
    : ex_(ex), ports_(std::move(p)), opts_(o), next_id_(o.first_id == 0 ? 1 : o.first_id) {}

snapshot_transfers::~snapshot_transfers() {
  *alive_ = false;
  if (sweep_timer_ != 0) ex_.cancel_timer(sweep_timer_);
}

std::size_t snapshot_transfers::receiving() const {
  return static_cast<std::size_t>(
      std::count_if(in_.begin(), in_.end(), [](const auto& e) { return !e.second->kept; }));
}

std::size_t snapshot_transfers::kept() const {
  return in_.size() - receiving();
}

// Sender.

void snapshot_transfers::send(install s) {
  const key k{s.peer.value(), s.group.value()};
  if (auto it = out_.find(k); it != out_.end()) {
    const install& now = it->second->inst;
    if (now.last_index == s.last_index && now.last_term == s.last_term &&
        ex_.now_ms() - it->second->last_news_ms < opts_.stall_ms) {
      // libraft sends the same snapshot again after its install timeout while this transfer still moves
      // (a large group on a slow link): starting over would never finish. It goes on, and its install
      // follows its chunks as libraft wants.
      ++stats_.transfers_continued;
      return;
    }
    // Another snapshot (a newer one), or the transfer stalled: the new one replaces it. Its reads in
    // flight are ignored when they complete; the receiver takes over what it kept of the same snapshot,
    // or discards it for another.
    out_.erase(it);
    ++stats_.transfers_replaced;
  }
  auto parts = split(ports_, s.data);
  auto refs = parts ? streams::snapshot_part_references(parts->parts.streams)
                    : result<std::vector<streams::part_reference>>(parts.err());
  if (!refs) {
    log::warn("weir cluster: group {}: snapshot {} not sent to node {}: {}", s.group.value(),
              s.last_index.value(), s.peer.value(), refs.err().reason);
    ++stats_.transfers_dropped;
    return;
  }
  if (refs->empty()) {  // every record inline: one frame, as it is stored
    s.transfer = 0;
    s.chunks = 0;
    (void)ports_.send_install(s);
    return;
  }
  auto t = std::make_unique<outgoing>();
  t->id = next_id_++;
  std::set<record_key> seen;
  for (const auto& r : *refs) {
    const record_key rk = key_of(r);
    if (seen.insert(rk).second) t->keys.push_back(rk);
  }
  t->inst = std::move(s);
  t->last_news_ms = ex_.now_ms();
  log::info("weir cluster: group {}: sending snapshot {} to node {}: transfer {}, {} records", k.second,
            t->inst.last_index.value(), k.first, t->id, t->keys.size());
  // Chunk 0 opens the transfer: nothing is read before the receiver says where to start.
  t->next_seq = 1;
  t->next_send = 1;
  ports_.send_chunk(t->inst.peer, t->inst.group,
                    raft::wire::snapshot_chunk{t->id, 0, t->inst.last_index, t->inst.last_term, {}});
  out_[k] = std::move(t);
  arm_sweep();
}

void snapshot_transfers::pump(outgoing& t) {
  if (!t.opened) return;
  const key k{t.inst.peer.value(), t.inst.group.value()};
  while (t.next_key < t.keys.size() && t.next_seq - t.acked < std::max(1u, opts_.window)) {
    std::vector<piece_read> pieces;
    std::uint32_t budget = std::max<std::uint32_t>(1, opts_.chunk_bytes);
    while (budget > 0 && t.skip_held() < t.keys.size()) {
      const record_key& rk = t.keys[t.next_key];
      const std::uint32_t n = std::min(budget, rk.size - t.key_offset);
      pieces.push_back(piece_read{rk, t.key_offset, n});
      budget -= n;
      t.key_offset += n;
      if (t.key_offset == rk.size) {
        ++t.next_key;
        t.key_offset = 0;
      }
    }
    if (pieces.empty()) break;  // the rest is held there
    const std::uint32_t seq = t.next_seq++;
    ports_.read(pieces, [this, alive = std::weak_ptr<bool>(alive_), id = t.id, k, seq,
                         pieces](result<std::vector<std::string>> bytes) mutable {
      if (auto a = alive.lock(); a && *a) on_read(id, k, seq, std::move(pieces), std::move(bytes));
    });
  }
  if (t.skip_held() == t.keys.size() && t.next_send == t.next_seq) {
    // Every chunk is on its way: the install follows them on the same link.
    t.inst.transfer = t.id;
    t.inst.chunks = t.next_seq;
    if (ports_.send_install(t.inst)) {
      ++stats_.transfers_sent;
      log::info("weir cluster: group {}: snapshot {} sent to node {}: {} chunks, {} bytes", k.second,
                t.inst.last_index.value(), k.first, t.next_seq, t.bytes);
    } else {
      ++stats_.transfers_dropped;
    }
    out_.erase(k);
  }
}

void snapshot_transfers::on_read(std::uint64_t id, key k, std::uint32_t seq, std::vector<piece_read> pieces,
                                 result<std::vector<std::string>> bytes) {
  auto it = out_.find(k);
  if (it == out_.end() || it->second->id != id) return;  // replaced or dropped meanwhile
  outgoing& t = *it->second;
  if (!bytes) return drop_out(k, "reading its records failed: " + bytes.err().reason);
  if (bytes->size() != pieces.size()) return drop_out(k, "a read returned another number of pieces");
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if ((*bytes)[i].size() != pieces[i].length) return drop_out(k, "a read returned a piece of another size");
  }
  t.ready.emplace(seq, outgoing::read_chunk{std::move(pieces), std::move(*bytes)});
  while (!t.ready.empty() && t.ready.begin()->first == t.next_send) {
    auto node = t.ready.extract(t.ready.begin());
    raft::wire::snapshot_chunk c;
    c.transfer = t.id;
    c.seq = t.next_send++;
    c.last_index = t.inst.last_index;
    c.last_term = t.inst.last_term;
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < node.mapped().pieces.size(); ++i) {
      const piece_read& p = node.mapped().pieces[i];
      const std::string& b = node.mapped().bytes[i];
      c.pieces.push_back(
          raft::wire::record_piece{p.key, p.offset, std::as_bytes(std::span(b.data(), b.size()))});
      n += b.size();
    }
    ports_.send_chunk(t.inst.peer, t.inst.group, std::move(c));  // encoded (copied) inside
    ++stats_.chunks_sent;
    stats_.bytes_sent += n;
    t.bytes += n;
  }
  pump(t);
}

void snapshot_transfers::on_chunk_ack(raft::node_id from, raft::group_id g,
                                      const raft::wire::snapshot_chunk_ack& a) {
  const key k{from.value(), g.value()};
  auto it = out_.find(k);
  if (it == out_.end() || it->second->id != a.transfer) return;
  outgoing& t = *it->second;
  if (a.seq >= t.next_send) return;  // acknowledges a chunk never sent: not ours to trust
  if (!t.opened) {
    if (a.seq != 0) return;
    if (a.resume > t.keys.size()) {
      return drop_out(k, "the receiver holds " + std::to_string(a.resume) + " of its " +
                             std::to_string(t.keys.size()) + " records");
    }
    // The receiver kept the first `resume` records of a dropped transfer of this snapshot, written,
    // and the records `held` of earlier transfers (of this snapshot or another): none is sent again.
    t.opened = true;
    t.next_key = a.resume;
    t.held.insert(a.held.begin(), a.held.end());
    std::uint64_t skipped = 0;
    std::size_t records = 0;
    for (std::size_t i = 0; i < t.keys.size(); ++i) {
      if (i >= a.resume && !t.held.contains(t.keys[i])) continue;
      skipped += t.keys[i].size;
      ++records;
    }
    if (records > 0) {
      ++stats_.transfers_resumed;
      stats_.bytes_skipped += skipped;
      log::info(
          "weir cluster: group {}: snapshot transfer {} to node {} resumes: {} of {} records ({} bytes) "
          "are there already (the first {})",
          k.second, t.id, k.first, records, t.keys.size(), skipped, a.resume);
    }
  }
  t.acked = std::max(t.acked, a.seq + 1);
  t.last_news_ms = ex_.now_ms();
  pump(t);
}

void snapshot_transfers::drop_out(key k, const std::string& why) {
  auto it = out_.find(k);
  if (it == out_.end()) return;
  log::warn("weir cluster: group {}: snapshot transfer {} to node {} dropped: {}", k.second, it->second->id,
            k.first, why);
  ++stats_.transfers_dropped;
  out_.erase(it);
}

// Receiver.

void snapshot_transfers::on_chunk(raft::node_id from, raft::group_id g, const raft::wire::snapshot_chunk& c) {
  const key k{from.value(), g.value()};
  if (c.seq == 0) return open_in(k, c);
  auto it = in_.find(k);
  // The rest of a transfer this node dropped or replaced: ignored.
  if (it == in_.end() || it->second->kept || it->second->id != c.transfer) return;
  incoming& t = *it->second;
  if (t.inst || c.seq < t.next_seq) return;  // a duplicate
  if (c.last_index != t.last_index || c.last_term != t.last_term)
    return drop_in(k, "a chunk names another snapshot", false);
  if (c.seq > t.next_seq) {
    return drop_in(k, "chunk " + std::to_string(c.seq) + " arrived before " + std::to_string(t.next_seq),
                   true);
  }
  ++t.next_seq;
  ++stats_.chunks_received;
  t.last_news_ms = ex_.now_ms();
  t.unacked.push_back(incoming::chunk_writes{c.seq, 0});
  for (const raft::wire::record_piece& p : c.pieces) {
    if (!take_piece(t, p)) return;  // dropped
  }
  send_acks(t);
}

void snapshot_transfers::open_in(key k, const raft::wire::snapshot_chunk& c) {
  auto it = in_.find(k);
  // A duplicate, or the opening of a transfer this node dropped (a new one has a new id): ignored.
  if (it != in_.end() && it->second->id == c.transfer) return;
  if (it != in_.end() && (it->second->last_index != c.last_index || it->second->last_term != c.last_term)) {
    // Another snapshot of the group from the same sender (a newer one, mostly): the records written
    // are the same bytes at the same places of the sender's data log, which never change, so they
    // serve it as far as it references them (the sender skips those named), unless too many are kept.
    incoming& old = *it->second;
    if (!old.kept) ++stats_.transfers_replaced;
    const bool carry = old.copied_bytes <= opts_.keep_bytes;
    log::info(
        "weir cluster: group {}: snapshot transfer {} from node {} ({} records written) replaced by "
        "one of snapshot {}{}",
        k.second, old.id, k.first, old.copies.size(), c.last_index.value(),
        carry ? ": the records written serve it" : "");
    if (carry) {
      old.last_index = c.last_index;
      old.last_term = c.last_term;
      old.order.clear();  // positions in the old snapshot's order
    } else {
      discard_in(it);
      it = in_.end();
    }
  }
  // Progress of an older snapshot of the group kept from another sender serves nothing any more.
  for (auto o = in_.begin(); o != in_.end();) {
    if (o->first.second == k.second && o->first != k && o->second->kept &&
        o->second->last_index < c.last_index) {
      const key gone = o->first;
      discard_in(o);
      o = in_.upper_bound(gone);
    } else {
      ++o;
    }
  }
  it = in_.find(k);
  if (it == in_.end()) {
    auto t = std::make_unique<incoming>();
    t->k = k;
    t->pin = next_id_++;
    t->last_index = c.last_index;
    t->last_term = c.last_term;
    it = in_.emplace(k, std::move(t)).first;
    arm_sweep();
  }
  // A new transfer, or one of the same snapshot taking over what an earlier one (dropped, or dropped by
  // the sender) wrote: its written prefix is skipped; a record only partly received comes again whole.
  incoming& t = *it->second;
  const std::uint32_t held = t.held();
  t.order.resize(held);
  // The other records written are named (as many as fit) for the sender to skip wherever they come.
  std::vector<record_key> others;
  const std::set<record_key> prefix(t.order.begin(), t.order.end());
  for (const auto& [rk, copy] : t.copies) {
    if (others.size() == max_held_named) break;
    if (!prefix.contains(rk)) others.push_back(rk);
  }
  if (held > 0 || !others.empty()) {
    ++stats_.transfers_resumed;
    log::info(
        "weir cluster: group {}: snapshot transfer {} from node {} resumes transfer {}: the first {} records "
        "are here, and {} others",
        k.second, c.transfer, k.first, t.id, held, others.size());
  }
  t.id = c.transfer;
  t.kept = false;
  t.next_seq = 1;
  t.assembling.reset();
  t.buf = {};
  t.unacked.clear();
  t.inst.reset();
  t.waiting_sync = false;  // a sync still awaited for the old install finds another transfer: ignored
  t.last_news_ms = ex_.now_ms();
  ports_.send_ack(raft::node_id(k.first), raft::group_id(k.second), {c.transfer, 0, held, std::move(others)});
}

bool snapshot_transfers::take_piece(incoming& t, const raft::wire::record_piece& p) {
  const bool continues =
      t.assembling ? *t.assembling == p.key && p.piece_offset == t.buf.size() : p.piece_offset == 0;
  if (!continues) {
    drop_in(t.k, "a piece does not continue its record", true);
    return false;
  }
  if (!t.assembling) {
    t.assembling = p.key;
    t.buf.clear();
    t.buf.reserve(p.key.size);
  }
  t.buf.append(reinterpret_cast<const char*>(p.bytes.data()), p.bytes.size());
  stats_.bytes_received += p.bytes.size();
  t.bytes += p.bytes.size();
  if (t.buf.size() < p.key.size) return true;
  const record_key rk = *t.assembling;
  t.assembling.reset();
  std::string bytes = std::move(t.buf);
  t.buf = {};
  t.order.push_back(rk);
  if (t.copies.contains(rk)) return true;  // sent twice, or written by an earlier transfer: that copy serves
  ++t.writes_pending;
  ++t.unacked.back().pending;
  ports_.write(t.pin, std::move(bytes),
               [this, alive = std::weak_ptr<bool>(alive_), k = t.k, pin = t.pin, id = t.id,
                seq = t.unacked.back().seq, rk](result<streams::disk_location> at) {
                 if (auto a = alive.lock(); a && *a) on_written(k, pin, id, seq, rk, std::move(at));
               });
  return true;
}

void snapshot_transfers::on_written(key k, std::uint64_t pin, std::uint64_t id, std::uint32_t seq,
                                    record_key rk, result<streams::disk_location> at) {
  auto it = in_.find(k);
  if (it == in_.end() || it->second->pin != pin) {
    ports_.unpin(pin);  // written after its transfer was discarded: pinned by the write, garbage now
    return;
  }
  incoming& t = *it->second;
  if (!at) {
    if (!t.kept) return drop_in(k, "writing a record to the data log failed: " + at.err().reason, false);
    log::warn(
        "weir cluster: group {}: the progress kept of a snapshot transfer from node {} is dropped: "
        "writing a record failed: {}",
        k.second, k.first, at.err().reason);
    return discard_in(it);
  }
  if (t.copies.emplace(rk, streams::part_reference{*at, 0, rk.size}).second) t.copied_bytes += rk.size;
  if (!t.last_at || std::pair(at->segment, at->offset) > std::pair(t.last_at->segment, t.last_at->offset))
    t.last_at = *at;
  --t.writes_pending;
  if (t.kept) return;
  if (id == t.id) {  // a write of an earlier transfer counts for no chunk of this one
    for (auto& c : t.unacked) {
      if (c.seq == seq) --c.pending;
    }
  }
  t.last_news_ms = ex_.now_ms();
  send_acks(t);
  try_finish(t);
}

void snapshot_transfers::send_acks(incoming& t) {
  std::optional<std::uint32_t> last;
  while (!t.unacked.empty() && t.unacked.front().pending == 0) {
    last = t.unacked.front().seq;
    t.unacked.pop_front();
  }
  if (last) ports_.send_ack(raft::node_id(t.k.first), raft::group_id(t.k.second), {t.id, *last, 0, {}});
}

void snapshot_transfers::on_install(install s) {
  const key k{s.peer.value(), s.group.value()};
  auto it = in_.find(k);
  if (it == in_.end() || it->second->kept || it->second->id != s.transfer) {
    log::warn("weir cluster: group {}: snapshot {} from node {} dropped: transfer {} is not in progress here",
              k.second, s.last_index.value(), k.first, s.transfer);
    ++stats_.transfers_dropped;
    return;
  }
  incoming& t = *it->second;
  if (t.inst) return;  // a duplicate
  if (s.last_index != t.last_index || s.last_term != t.last_term)
    return drop_in(k, "the install names another snapshot than its chunks", false);
  if (s.chunks != t.next_seq || t.assembling) {
    return drop_in(k,
                   "the install names " + std::to_string(s.chunks) + " chunks, " +
                       std::to_string(t.next_seq) + " arrived" +
                       (t.assembling ? " (a record unfinished)" : ""),
                   true);
  }
  t.inst = std::move(s);
  t.last_news_ms = ex_.now_ms();
  try_finish(t);
}

void snapshot_transfers::try_finish(incoming& t) {
  if (!t.inst || t.writes_pending > 0 || t.waiting_sync) return;
  if (!t.last_at) return finish(t.k, 0);
  // The copies (those of earlier transfers it resumed too) must be durable before the node log records
  // the snapshot that references them.
  t.waiting_sync = true;
  t.sync_wait = next_id_++;
  ports_.when_durable(*t.last_at, [this, alive = std::weak_ptr<bool>(alive_), k = t.k, wait = t.sync_wait] {
    if (auto a = alive.lock(); a && *a) finish(k, wait);
  });
}

void snapshot_transfers::finish(key k, std::uint64_t sync_wait) {
  auto it = in_.find(k);
  if (it == in_.end() || it->second->kept || !it->second->inst) return;
  incoming& t = *it->second;
  // From try_finish without copies (0), or the sync it awaits: another transfer took the progress over,
  // or the transfer was dropped, since that sync was asked for.
  if (sync_wait == 0 ? t.last_at.has_value() : !t.waiting_sync || t.sync_wait != sync_wait) return;
  const std::uint64_t id = t.id;
  install& s = *t.inst;
  auto parts = split(ports_, s.data);
  if (!parts) return drop_in(k, "its snapshot is malformed: " + parts.err().reason, false);
  auto streams = streams::relocate_snapshot_part(
      parts->parts.streams, [&](const streams::part_reference& r) -> std::optional<streams::part_reference> {
        auto c = t.copies.find(key_of(r));
        if (c == t.copies.end()) return std::nullopt;
        return c->second;
      });
  if (!streams) return drop_in(k, streams.err().reason, false);
  std::vector<std::byte> data(s.data.begin(), s.data.begin() + static_cast<std::ptrdiff_t>(parts->offset));
  const std::vector<std::byte> state =
      encode_group_snapshot(*streams, parts->parts.subscriptions, parts->parts.cold);
  data.insert(data.end(), state.begin(), state.end());
  s.data = std::move(data);
  s.transfer = 0;
  s.chunks = 0;
  if (!ports_.deliver(s)) return drop_in(k, "the group does not run here", false);
  log::info(
      "weir cluster: group {}: snapshot {} from node {} installed from transfer {} ({} records, {} bytes "
      "received)",
      k.second, s.last_index.value(), k.first, id, t.copies.size(), t.bytes);
  ++stats_.transfers_completed;
  // Pinned until the group's restore pins what its state references (restored()).
  delivered_.push_back(delivered_pins{k.second, t.pin, ex_.now_ms()});
  const raft::log_index at = t.last_index;
  in_.erase(it);
  // Progress kept of this snapshot or an older one of the group (from another sender) serves nothing.
  for (auto o = in_.begin(); o != in_.end();) {
    if (o->first.second == k.second && o->second->kept && o->second->last_index <= at) {
      const key gone = o->first;
      discard_in(o);
      o = in_.upper_bound(gone);
    } else {
      ++o;
    }
  }
}

void snapshot_transfers::restored(raft::group_id g) {
  std::erase_if(delivered_, [&](const delivered_pins& d) {
    if (d.group != g.value()) return false;
    ports_.unpin(d.pin);
    return true;
  });
}

void snapshot_transfers::drop_in(key k, const std::string& why, bool keep) {
  auto it = in_.find(k);
  if (it == in_.end()) return;
  incoming& t = *it->second;
  keep = keep && !t.kept && (!t.copies.empty() || t.writes_pending > 0);
  log::warn("weir cluster: group {}: snapshot transfer {} from node {} dropped: {}{}", k.second, t.id,
            k.first, why,
            keep ? fmt::format(" ({} records written kept for a resume)", t.copies.size()) : "");
  ++stats_.transfers_dropped;
  if (!keep) return discard_in(it);
  ++stats_.transfers_kept;
  t.kept = true;
  t.assembling.reset();
  t.buf = {};
  t.unacked.clear();
  t.inst.reset();
  t.waiting_sync = false;
  t.last_news_ms = ex_.now_ms();
  trim_kept();
}

void snapshot_transfers::discard_in(std::map<key, std::unique_ptr<incoming>>::iterator it) {
  ports_.unpin(it->second->pin);
  in_.erase(it);
}

void snapshot_transfers::trim_kept() {
  for (;;) {
    std::size_t n = 0;
    std::uint64_t bytes = 0;
    auto oldest = in_.end();
    for (auto it = in_.begin(); it != in_.end(); ++it) {
      if (!it->second->kept) continue;
      ++n;
      bytes += it->second->copied_bytes;
      if (oldest == in_.end() || it->second->last_news_ms < oldest->second->last_news_ms) oldest = it;
    }
    if (n <= opts_.keep_max && bytes <= opts_.keep_bytes) return;
    log::info(
        "weir cluster: group {}: the progress kept of snapshot transfer {} from node {} is dropped ({} "
        "transfers, {} bytes kept)",
        oldest->first.second, oldest->second->id, oldest->first.first, n, bytes);
    discard_in(oldest);
  }
}

void snapshot_transfers::arm_sweep() {
  if (sweep_timer_ != 0) return;
  sweep_timer_ = ex_.add_timer(sweep_every, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (auto a = alive.lock(); !a || !*a) return;
    sweep_timer_ = 0;
    sweep();
  });
}

void snapshot_transfers::sweep() {
  const std::int64_t now = ex_.now_ms();
  std::vector<key> stalled;
  for (const auto& [k, t] : out_) {
    if (now - t->last_news_ms >= opts_.stall_ms) stalled.push_back(k);
  }
  for (const key& k : stalled)
    drop_out(k, "no acknowledgement for " + std::to_string(opts_.stall_ms) + " ms");
  stalled.clear();
  std::erase_if(delivered_, [&](const delivered_pins& d) {
    if (now - d.since_ms < delivered_keep_ms) return false;
    ports_.unpin(d.pin);  // no restore followed: its copies are garbage
    return true;
  });
  for (auto it = in_.begin(); it != in_.end();) {
    incoming& t = *it->second;
    if (t.kept && now - t.last_news_ms >= opts_.keep_ms) {
      log::info("weir cluster: group {}: the progress kept of a snapshot transfer from node {} expired",
                it->first.second, it->first.first);
      ports_.unpin(t.pin);
      it = in_.erase(it);
      continue;
    }
    if (!t.kept && !t.waiting_sync && now - t.last_news_ms >= opts_.stall_ms) stalled.push_back(it->first);
    ++it;
  }
  for (const key& k : stalled)
    drop_in(k, "nothing arrived for " + std::to_string(opts_.stall_ms) + " ms", true);
  if (!out_.empty() || !in_.empty() || !delivered_.empty()) arm_sweep();
}

}  // namespace weir::replica
