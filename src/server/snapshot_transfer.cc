#include "server/snapshot_transfer.h"

#include <algorithm>
#include <deque>
#include <set>

#include "base/log.h"
#include "server/group_snapshot.h"
#include "streams/state_machine.h"

namespace weir::server {

namespace {

using raft::wire::record_key;

record_key key_of(const streams::part_reference& r) {
  return record_key{r.at.segment, r.at.offset, r.at.core, r.at.data_offset, r.begin, r.size};
}

constexpr std::chrono::milliseconds sweep_every{1000};
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
};

struct snapshot_transfers::incoming {
  key k;  // sender, group
  std::uint64_t id = 0;
  std::uint32_t next_seq = 0;
  std::optional<record_key> assembling;  // the record whose pieces are arriving
  std::string buf;
  std::map<record_key, streams::part_reference> copies;  // sender's record -> its copy here
  std::size_t writes_pending = 0;
  struct chunk_writes {
    std::uint32_t seq;
    std::size_t pending;
  };
  std::deque<chunk_writes> unacked;               // in sequence order
  std::optional<streams::disk_location> last_at;  // the latest copy written (a sync must cover it)
  std::optional<install> inst;
  bool waiting_sync = false;
  bool delivered = false;
  std::uint64_t bytes = 0;
  std::int64_t last_news_ms = 0;
};

snapshot_transfers::snapshot_transfers(raft::executor& ex, ports p, options o)
    : ex_(ex), ports_(std::move(p)), opts_(o), next_id_(o.first_id == 0 ? 1 : o.first_id) {}

snapshot_transfers::~snapshot_transfers() {
  *alive_ = false;
  if (sweep_timer_ != 0) ex_.cancel_timer(sweep_timer_);
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
    // flight are ignored when they complete; the receiver replaces it at chunk 0.
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
  outgoing& ref = *t;
  out_[k] = std::move(t);
  arm_sweep();
  pump(ref);
}

void snapshot_transfers::pump(outgoing& t) {
  const key k{t.inst.peer.value(), t.inst.group.value()};
  while (t.next_key < t.keys.size() && t.next_seq - t.acked < std::max(1u, opts_.window)) {
    std::vector<piece_read> pieces;
    std::uint32_t budget = std::max<std::uint32_t>(1, opts_.chunk_bytes);
    while (budget > 0 && t.next_key < t.keys.size()) {
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
    const std::uint32_t seq = t.next_seq++;
    ports_.read(pieces, [this, alive = std::weak_ptr<bool>(alive_), id = t.id, k, seq,
                         pieces](result<std::vector<std::string>> bytes) mutable {
      if (auto a = alive.lock(); a && *a) on_read(id, k, seq, std::move(pieces), std::move(bytes));
    });
  }
  if (t.next_key == t.keys.size() && t.next_send == t.next_seq) {
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
  auto it = out_.find(key{from.value(), g.value()});
  if (it == out_.end() || it->second->id != a.transfer) return;
  outgoing& t = *it->second;
  if (a.seq >= t.next_send) return;  // acknowledges a chunk never sent: not ours to trust
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
  auto it = in_.find(k);
  if (it == in_.end() || it->second->id != c.transfer) {
    if (c.seq != 0) return;  // the rest of a transfer this node dropped or replaced: ignored
    if (it != in_.end()) {
      if (!it->second->delivered) ++stats_.transfers_replaced;
      ports_.unpin(it->second->id);
      in_.erase(it);
    }
    auto t = std::make_unique<incoming>();
    t->k = k;
    t->id = c.transfer;
    it = in_.emplace(k, std::move(t)).first;
    arm_sweep();
  }
  incoming& t = *it->second;
  if (t.delivered || c.seq < t.next_seq) return;  // a duplicate
  if (c.seq > t.next_seq) {
    return drop_in(k, "chunk " + std::to_string(c.seq) + " arrived before " + std::to_string(t.next_seq));
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

bool snapshot_transfers::take_piece(incoming& t, const raft::wire::record_piece& p) {
  const bool continues =
      t.assembling ? *t.assembling == p.key && p.piece_offset == t.buf.size() : p.piece_offset == 0;
  if (!continues) {
    drop_in(t.k, "a piece does not continue its record");
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
  if (t.copies.contains(rk)) return true;  // sent twice: the first copy serves
  ++t.writes_pending;
  ++t.unacked.back().pending;
  ports_.write(t.id, std::move(bytes),
               [this, alive = std::weak_ptr<bool>(alive_), k = t.k, id = t.id, seq = t.unacked.back().seq,
                rk](result<streams::disk_location> at) {
                 if (auto a = alive.lock(); a && *a) on_written(k, id, seq, rk, std::move(at));
               });
  return true;
}

void snapshot_transfers::on_written(key k, std::uint64_t id, std::uint32_t seq, record_key rk,
                                    result<streams::disk_location> at) {
  auto it = in_.find(k);
  if (it == in_.end() || it->second->id != id) {
    ports_.unpin(id);  // written after its transfer went: pinned by the write, garbage now
    return;
  }
  incoming& t = *it->second;
  if (!at) return drop_in(k, "writing a record to the data log failed: " + at.err().reason);
  t.copies[rk] = streams::part_reference{*at, 0, rk.size};
  if (!t.last_at || std::pair(at->segment, at->offset) > std::pair(t.last_at->segment, t.last_at->offset))
    t.last_at = *at;
  --t.writes_pending;
  for (auto& c : t.unacked) {
    if (c.seq == seq) --c.pending;
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
  if (last) ports_.send_ack(raft::node_id(t.k.first), raft::group_id(t.k.second), {t.id, *last});
}

void snapshot_transfers::on_install(install s) {
  const key k{s.peer.value(), s.group.value()};
  auto it = in_.find(k);
  if (it == in_.end() || it->second->id != s.transfer) {
    log::warn("weir cluster: group {}: snapshot {} from node {} dropped: transfer {} is not in progress here",
              k.second, s.last_index.value(), k.first, s.transfer);
    ++stats_.transfers_dropped;
    return;
  }
  incoming& t = *it->second;
  if (t.delivered || t.inst) return;  // a duplicate
  if (s.chunks != t.next_seq || t.assembling) {
    return drop_in(k, "the install names " + std::to_string(s.chunks) + " chunks, " +
                          std::to_string(t.next_seq) + " arrived" +
                          (t.assembling ? " (a record unfinished)" : ""));
  }
  t.inst = std::move(s);
  t.last_news_ms = ex_.now_ms();
  try_finish(t);
}

void snapshot_transfers::try_finish(incoming& t) {
  if (!t.inst || t.writes_pending > 0 || t.waiting_sync || t.delivered) return;
  const key k{t.inst->peer.value(), t.inst->group.value()};
  if (!t.last_at) return finish(k, t.id);
  // The copies must be durable before the node log records the snapshot that references them.
  t.waiting_sync = true;
  ports_.when_durable(*t.last_at, [this, alive = std::weak_ptr<bool>(alive_), k, id = t.id] {
    if (auto a = alive.lock(); a && *a) finish(k, id);
  });
}

void snapshot_transfers::finish(key k, std::uint64_t id) {
  auto it = in_.find(k);
  if (it == in_.end() || it->second->id != id || !it->second->inst) return;
  incoming& t = *it->second;
  install& s = *t.inst;
  auto parts = split(ports_, s.data);
  if (!parts) return drop_in(k, "its snapshot is malformed: " + parts.err().reason);
  auto streams = streams::relocate_snapshot_part(
      parts->parts.streams, [&](const streams::part_reference& r) -> std::optional<streams::part_reference> {
        auto c = t.copies.find(key_of(r));
        if (c == t.copies.end()) return std::nullopt;
        return c->second;
      });
  if (!streams) return drop_in(k, streams.err().reason);
  std::vector<std::byte> data(s.data.begin(), s.data.begin() + static_cast<std::ptrdiff_t>(parts->offset));
  const std::vector<std::byte> state = encode_group_snapshot(*streams, parts->parts.subscriptions);
  data.insert(data.end(), state.begin(), state.end());
  s.data = std::move(data);
  s.transfer = 0;
  s.chunks = 0;
  if (!ports_.deliver(s)) return drop_in(k, "the group does not run here");
  log::info(
      "weir cluster: group {}: snapshot {} from node {} installed from transfer {} ({} records, {} bytes)",
      k.second, s.last_index.value(), k.first, id, t.copies.size(), t.bytes);
  ++stats_.transfers_completed;
  // Pinned until the group's restore pins what its state references (restored()).
  t.delivered = true;
  t.inst.reset();
  t.copies.clear();
  t.last_news_ms = ex_.now_ms();
}

void snapshot_transfers::restored(raft::group_id g) {
  for (auto it = in_.begin(); it != in_.end();) {
    if (it->first.second == g.value() && it->second->delivered) {
      ports_.unpin(it->second->id);
      it = in_.erase(it);
    } else {
      ++it;
    }
  }
}

void snapshot_transfers::drop_in(key k, const std::string& why) {
  auto it = in_.find(k);
  if (it == in_.end()) return;
  log::warn("weir cluster: group {}: snapshot transfer {} from node {} dropped: {}", k.second, it->second->id,
            k.first, why);
  ++stats_.transfers_dropped;
  ports_.unpin(it->second->id);
  in_.erase(it);
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
  for (auto it = in_.begin(); it != in_.end();) {
    incoming& t = *it->second;
    if (t.delivered && now - t.last_news_ms >= delivered_keep_ms) {
      ports_.unpin(t.id);  // no restore followed: its copies are garbage
      it = in_.erase(it);
      continue;
    }
    if (!t.delivered && !t.waiting_sync && now - t.last_news_ms >= opts_.stall_ms)
      stalled.push_back(it->first);
    ++it;
  }
  for (const key& k : stalled) drop_in(k, "nothing arrived for " + std::to_string(opts_.stall_ms) + " ms");
  if (!out_.empty() || !in_.empty()) arm_sweep();
}

}  // namespace weir::server
