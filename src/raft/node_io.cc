#include "raft/node_io.h"

#include "raft/libraft.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>

#include <fmt/format.h>

#include "base/assert.h"
#include "base/log.h"
#include "raft/byte_codec.h"
#include "raft/node_io_group.h"
#include "raft/wire_format.h"

namespace weir::raft {

// The wire codes are libraft's message types, one to one.
static_assert(static_cast<int>(wire::message_type::append_entries) == RAFT_IO_APPEND_ENTRIES);
static_assert(static_cast<int>(wire::message_type::append_entries_result) == RAFT_IO_APPEND_ENTRIES_RESULT);
static_assert(static_cast<int>(wire::message_type::request_vote) == RAFT_IO_REQUEST_VOTE);
static_assert(static_cast<int>(wire::message_type::request_vote_result) == RAFT_IO_REQUEST_VOTE_RESULT);
static_assert(static_cast<int>(wire::message_type::install_snapshot) == RAFT_IO_INSTALL_SNAPSHOT);
static_assert(static_cast<int>(wire::message_type::timeout_now) == RAFT_IO_TIMEOUT_NOW);

namespace {

using group = node_io::group;

group& group_of(::raft_io* io) {
  return *static_cast<group*>(io->impl);
}

std::vector<wire::server> servers_of(const raft_configuration& c) {
  std::vector<wire::server> out;
  out.reserve(c.n);
  for (unsigned i = 0; i < c.n; ++i)
    out.push_back(wire::server{node_id(c.servers[i].id), static_cast<std::uint8_t>(c.servers[i].role),
                               c.servers[i].address});
  return out;
}

std::vector<wire::entry> entries_of(const raft_entry* entries, unsigned n) {
  std::vector<wire::entry> out;
  out.reserve(n);
  for (unsigned i = 0; i < n; ++i) {
    const auto* base = static_cast<const std::byte*>(entries[i].buf.base);
    out.push_back(wire::entry{term_id(entries[i].term), static_cast<std::uint8_t>(entries[i].type),
                              std::span<const std::byte>(base, entries[i].buf.len)});
  }
  return out;
}

// A raft_malloc'd batch holding every entry's data, as libraft expects of received and loaded entries
// (one batch per array: recv_append_entries.c frees entries[0].batch).
template <class Entry, class DataOf>
int make_entry_batch(const std::vector<Entry>& in, DataOf data_of, raft_entry** out, unsigned* n_out) {
  *out = nullptr;
  *n_out = 0;
  if (in.empty()) return 0;
  std::size_t total = 0;
  for (const Entry& e : in) total += data_of(e).size();
  auto* batch = static_cast<std::byte*>(raft_malloc(std::max<std::size_t>(total, 1)));
  auto* entries = static_cast<raft_entry*>(raft_malloc(in.size() * sizeof(raft_entry)));
  if (batch == nullptr || entries == nullptr) {
    raft_free(batch);
    raft_free(entries);
    return RAFT_NOMEM;
  }
  std::size_t off = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const auto d = data_of(in[i]);
    if (!d.empty()) std::memcpy(batch + off, d.data(), d.size());
    entries[i].term = in[i].term.value();
    entries[i].type = in[i].type;
    entries[i].buf.base = batch + off;
    entries[i].buf.len = d.size();
    entries[i].batch = batch;
    off += d.size();
  }
  *out = entries;
  *n_out = static_cast<unsigned>(in.size());
  return 0;
}

// The entries load() hands libraft, each in a batch of its own (entries[i].batch = its own buffer).
// libraft 0.15 frees a batch shared by several entries once the log holds none of them, even while a
// send still holds one (an AppendEntries in flight, its entries since dropped by a snapshot), and the
// send's release then frees it again: a double free that the cluster simulation hit (seed 102930 of
// the slow run) on the batch of entries loaded at start. Received entries keep one batch per message
// (recv_append_entries.c frees entries[0].batch on error).
template <class Entry, class DataOf>
int make_entry_singles(const std::vector<Entry>& in, DataOf data_of, raft_entry** out, unsigned* n_out) {
  *out = nullptr;
  *n_out = 0;
  if (in.empty()) return 0;
  auto* entries = static_cast<raft_entry*>(raft_calloc(in.size(), sizeof(raft_entry)));
  if (entries == nullptr) return RAFT_NOMEM;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const auto d = data_of(in[i]);
    auto* buf = static_cast<std::byte*>(raft_malloc(std::max<std::size_t>(d.size(), 1)));
    if (buf == nullptr) {
      for (std::size_t k = 0; k < i; ++k) raft_free(entries[k].batch);
      raft_free(entries);
      return RAFT_NOMEM;
    }
    if (!d.empty()) std::memcpy(buf, d.data(), d.size());
    entries[i].term = in[i].term.value();
    entries[i].type = in[i].type;
    entries[i].buf.base = buf;
    entries[i].buf.len = d.size();
    entries[i].batch = buf;
  }
  *out = entries;
  *n_out = static_cast<unsigned>(in.size());
  return 0;
}

// A raft_malloc'd snapshot (with one buffer) from the stored one; nullptr on allocation failure.
raft_snapshot* make_snapshot(const stored_snapshot& s) {
  auto* snap = static_cast<raft_snapshot*>(raft_calloc(1, sizeof(raft_snapshot)));
  if (snap == nullptr) return nullptr;
  snap->index = s.index.value();
  snap->term = s.term.value();
  snap->configuration_index = s.conf_index.value();
  raft_configuration_init(&snap->configuration);
  std::vector<wire::server> servers;
  byte_reader r(s.conf);
  bool ok = wire::decode_servers(r, servers) && fill_configuration(snap->configuration, servers) == 0;
  snap->bufs = static_cast<raft_buffer*>(raft_malloc(sizeof(raft_buffer)));
  void* data = raft_malloc(std::max<std::size_t>(s.data.size(), 1));
  if (!ok || snap->bufs == nullptr || data == nullptr) {
    raft_configuration_close(&snap->configuration);
    raft_free(snap->bufs);
    raft_free(data);
    raft_free(snap);
    return nullptr;
  }
  if (!s.data.empty()) std::memcpy(data, s.data.data(), s.data.size());
  snap->bufs[0].base = data;
  snap->bufs[0].len = s.data.size();
  snap->n_bufs = 1;
  return snap;
}

}  // namespace

// The C entry points of struct raft_io, one set for every group (io->impl is the group).
struct group_io_methods {
  static int init(::raft_io* io, raft_id id, const char* /*address*/) {
    group& g = group_of(io);
    if (id != g.owner->opts_.self.value()) {
      std::snprintf(io->errmsg, RAFT_ERRMSG_BUF_SIZE, "raft_init with id %llu on node %llu", id,
                    static_cast<unsigned long long>(g.owner->opts_.self.value()));
      return RAFT_INVALID;
    }
    return 0;
  }

  // Fires every pending callback of the group with RAFT_CANCELED (appends newest first: libraft's
  // leader callback truncates its in-memory log from the failed index), then `cb`. Synchronous, as in
  // libraft's own stub I/O.
  static void close(::raft_io* io, raft_io_close_cb cb) {
    group& g = group_of(io);
    g.started = false;
    g.closed = true;
    g.held.clear();
    fail_group(g, RAFT_CANCELED, 0);
    auto sends = std::move(g.sends);
    for (auto& s : sends)
      if (s.cb != nullptr) s.cb(s.req, RAFT_CANCELED);  // libraft sends TimeoutNow without a callback
    auto gets = std::move(g.gets);
    for (auto& s : gets) s.cb(s.req, nullptr, RAFT_CANCELED);
    auto works = std::move(g.works);
    for (auto& w : works) w.cb(w.req, RAFT_CANCELED);
    if (cb != nullptr) cb(io);
  }

  // Fails pending appends and snapshot puts of batches >= from_batch, newest first.
  static void fail_group(group& g, int status, std::uint64_t from_batch) {
    std::vector<group::pending_append> failed;
    while (!g.appends.empty() && g.appends.back().batch >= from_batch) {
      failed.push_back(g.appends.back());
      g.appends.pop_back();
    }
    std::vector<group::pending_put> failed_puts;
    while (!g.puts.empty() && g.puts.back().batch >= from_batch) {
      failed_puts.push_back(g.puts.back());
      g.puts.pop_back();
    }
    for (auto& p : failed_puts) {
      p.cb(p.req, status);
#if WEIR_LIBRAFT_LEAKS_FAILED_INSTALL_BUFS
      // libraft < 0.17 frees a failed InstallSnapshot's data and configuration but not the array of
      // buffers it allocated for them (installSnapshotCb's discard path); 0.17 frees it itself.
      if (p.install_bufs != nullptr) raft_free(p.install_bufs);
#endif
    }
    for (auto& a : failed) a.cb(a.req, status);
  }

  static int load(::raft_io* io, raft_term* term, raft_id* voted_for, raft_snapshot** snapshot,
                  raft_index* start_index, raft_entry** entries, size_t* n_entries) {
    group& g = group_of(io);
    group_state s = g.recovered ? std::move(*g.recovered) : group_state{};
    g.recovered.reset();
    *term = s.term.value();
    *voted_for = s.vote.value();
    *snapshot = nullptr;
    if (s.snapshot) {
      *snapshot = make_snapshot(*s.snapshot);
      if (*snapshot == nullptr) return RAFT_NOMEM;
    }
    unsigned n = 0;
    int rv = make_entry_singles(
        s.entries, [](const stored_entry& e) { return std::span<const std::byte>(e.data); }, entries, &n);
    if (rv != 0) {
      if (*snapshot != nullptr) {
        raft_configuration_close(&(*snapshot)->configuration);
        raft_free((*snapshot)->bufs[0].base);
        raft_free((*snapshot)->bufs);
        raft_free(*snapshot);
      }
      return rv;
    }
    *n_entries = n;
    *start_index = s.start.value();
    g.next_index = s.next_index();
    g.term = s.term.value();
    g.snapshot = std::move(s.snapshot);
    return 0;
  }

  static int start(::raft_io* io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv) {
    group& g = group_of(io);
    g.tick = tick;
    g.recv = recv;
    g.started = true;
    g.owner->ensure_tick(msecs);
    return 0;
  }

  // Writes term 1 and the configuration entry into the open batch, like any other record: it is durable
  // after the first sync (a crash before it leaves the group empty, as if never bootstrapped).
  static int bootstrap(::raft_io* io, const raft_configuration* conf) {
    group& g = group_of(io);
    group_state& s = g.recovered ? *g.recovered : g.recovered.emplace();
    if (s.term.value() != 0 || !s.entries.empty() || s.snapshot) return RAFT_CANTBOOTSTRAP;
    raft_buffer buf{};
    if (int rv = raft_configuration_encode(conf, &buf); rv != 0) return rv;
    const auto* base = static_cast<const std::byte*>(buf.base);
    std::vector<std::byte> data(base, base + buf.len);
    raft_free(buf.base);
    node_log& log = g.owner->log_;
    log.add(record::log_record{g.id, record::term{term_id(1)}});
    record::entries e{log_index(1), {wire::entry{term_id(1), RAFT_CHANGE, data}}};
    log.add(record::log_record{g.id, std::move(e)});
    g.owner->schedule_turn_end();
    s.term = term_id(1);
    s.vote = node_id(0);
    s.start = log_index(1);
    s.entries.push_back(stored_entry{term_id(1), RAFT_CHANGE, std::move(data)});
    return 0;
  }

  static int recover(::raft_io* io, const raft_configuration*) {
    std::snprintf(io->errmsg, RAFT_ERRMSG_BUF_SIZE, "raft_recover is not supported by weir's node_io");
    return RAFT_IOERR;
  }

  static int set_term(::raft_io* io, raft_term term) {
    group& g = group_of(io);
    g.term = term;
    g.first_of_term = 0;
    g.fence = g.owner->log_.add(record::log_record{g.id, record::term{term_id(term)}});
    g.owner->schedule_turn_end();
    return 0;
  }

  static int set_vote(::raft_io* io, raft_id server_id) {
    group& g = group_of(io);
    g.fence = g.owner->log_.add(record::log_record{g.id, record::vote{node_id(server_id)}});
    g.owner->schedule_turn_end();
    return 0;
  }

  // At least the encoded frame's size (wire_format.cc: a frame's header and fields, 13 bytes per entry
  // ahead of its data; servers and snapshot data of an InstallSnapshot).
  static std::size_t frame_size_hint(const raft_message& m) {
    std::size_t n = 128;
    if (m.type == RAFT_IO_APPEND_ENTRIES) {
      for (unsigned k = 0; k < m.append_entries.n_entries; ++k) n += 16 + m.append_entries.entries[k].buf.len;
    } else if (m.type == RAFT_IO_INSTALL_SNAPSHOT) {
      n += m.install_snapshot.data.len;
      for (unsigned k = 0; k < m.install_snapshot.conf.n; ++k)
        n += 32 + std::strlen(m.install_snapshot.conf.servers[k].address);
    }
    return n;
  }

  // An AppendEntries of barriers only, each of a few bytes (none: a heartbeat).
  static bool only_small_barriers(const raft_append_entries& a) {
    constexpr std::size_t small_barrier = 64;
    for (unsigned k = 0; k < a.n_entries; ++k)
      if (a.entries[k].type != RAFT_BARRIER || a.entries[k].buf.len > small_barrier) return false;
    return true;
  }

  static int send(::raft_io* io, raft_io_send* req, const raft_message* m, raft_io_send_cb cb) {
    group& g = group_of(io);
    node_io& n = *g.owner;
    const node_id to(m->server_id);
    if (!n.opts_.addresses.contains(to) || to == n.opts_.self) {
      std::snprintf(io->errmsg, RAFT_ERRMSG_BUF_SIZE, "send to unknown node %llu", m->server_id);
      return RAFT_NOCONNECTION;
    }
    wire::message w{g.id, {}};
    switch (m->type) {
      case RAFT_IO_APPEND_ENTRIES: {
        const auto& a = m->append_entries;
        w.payload =
            wire::append_entries{term_id(a.term), log_index(a.prev_log_index), term_id(a.prev_log_term),
                                 log_index(a.leader_commit), entries_of(a.entries, a.n_entries)};
        break;
      }
      case RAFT_IO_APPEND_ENTRIES_RESULT: {
        const auto& a = m->append_entries_result;
        w.payload = wire::append_entries_result{term_id(a.term), log_index(a.rejected),
                                                log_index(clamp_append_result(g, a))};
        break;
      }
      case RAFT_IO_REQUEST_VOTE: {
        const auto& a = m->request_vote;
        w.payload =
            wire::request_vote{term_id(a.term),          node_id(a.candidate_id), log_index(a.last_log_index),
                               term_id(a.last_log_term), a.disrupt_leader,        a.pre_vote};
        break;
      }
      case RAFT_IO_REQUEST_VOTE_RESULT: {
        const auto& a = m->request_vote_result;
        w.payload =
            wire::request_vote_result{term_id(a.term), a.vote_granted, static_cast<std::uint8_t>(a.pre_vote)};
        break;
      }
      case RAFT_IO_INSTALL_SNAPSHOT: {
        const auto& a = m->install_snapshot;
        std::span<const std::byte> data(static_cast<const std::byte*>(a.data.base), a.data.len);
        if (n.transfers_ != nullptr) {
          // The transfer copies the records the snapshot references first, then sends the install
          // (send_install). libraft's callback completes at the end of this turn: the message is copied,
          // and a lost transfer is like a lost message (libraft sends again after its install timeout).
          node_io::snapshot_install s;
          s.group = g.id;
          s.peer = to;
          s.term = term_id(a.term);
          s.last_index = log_index(a.last_index);
          s.last_term = term_id(a.last_term);
          s.conf_index = log_index(a.conf_index);
          byte_writer cw(s.conf);
          wire::encode_servers(servers_of(a.conf), cw);
          s.data.assign(data.begin(), data.end());
          n.transfers_->send(std::move(s));
          g.sends.push_back(group::done_send{req, cb});
          n.schedule_turn_end();
          return 0;
        }
        if (data.size() > wire::max_frame_body - 4096) {
          // Without a transfer handler (the raft simulation) one frame carries the whole snapshot.
          log::error("raft node {}: group {}: snapshot {} of {} bytes is too large to send to node {}",
                     n.opts_.self.value(), g.id.value(), a.last_index, data.size(), to.value());
          ++n.stats_.snapshots_unsent;
          return RAFT_IOERR;
        }
        ++n.stats_.snapshots_sent;
        w.payload = wire::install_snapshot{term_id(a.term),
                                           log_index(a.last_index),
                                           term_id(a.last_term),
                                           servers_of(a.conf),
                                           log_index(a.conf_index),
                                           0,
                                           0,
                                           data};
        break;
      }
      case RAFT_IO_TIMEOUT_NOW: {
        const auto& a = m->timeout_now;
        w.payload = wire::timeout_now{term_id(a.term), log_index(a.last_log_index), term_id(a.last_log_term)};
        break;
      }
      default:
        std::snprintf(io->errmsg, RAFT_ERRMSG_BUF_SIZE, "send of message type %u", m->type);
        return RAFT_MALFORMED;
    }
    // Room for the whole frame first: its entries are copied into it once, never moved by a regrowth.
    std::vector<std::byte> frame;
    frame.reserve(frame_size_hint(*m));
    wire::encode_frame(w, frame);
    // Small messages may take the urgent lane (node_io.h, "Lanes"): all but InstallSnapshot, an
    // AppendEntries that carries entries other than small barriers, and a heartbeat past what `to` has
    // acknowledged (its entries may still be on their way, in the bulk lane).
    const bool small =
        m->type != RAFT_IO_INSTALL_SNAPSHOT &&
        !(m->type == RAFT_IO_APPEND_ENTRIES &&
          (!only_small_barriers(m->append_entries) ||
           (m->append_entries.n_entries == 0 &&
            m->append_entries.prev_log_index > g.acknowledged_by(to, m->append_entries.term))));
    n.queue_frame(g, to, std::move(frame), small);
    // The message is copied: the callback may fire at the end of this turn.
    g.sends.push_back(group::done_send{req, cb});
    n.schedule_turn_end();
    return 0;
  }

  // libraft 0.15 answers an AppendEntries it accepts without new entries (a heartbeat, or entries it
  // already has) with last_log_index = its last stored index, and the leader takes that as the match
  // index (capped at its own last index). A follower whose log still holds an uncommitted tail from an
  // older term then counts as matching entries it does not have: the leader ignores its later
  // rejections as stale and never repairs its log (and could count it toward a commit). The reply may
  // only vouch for prev_log_index + n_entries (Raft 5.3; the same fix as etcd #1367 and RATIS-2605).
  // Such replies are sent from inside recv, so node_io knows which AppendEntries they answer; replies
  // sent later, from the append callback, follow the new entries, which end the log.
  static raft_index clamp_append_result(group& g, const raft_append_entries_result& a) {
    if (a.rejected != 0 || !g.answering_up_to || a.last_log_index <= *g.answering_up_to)
      return a.last_log_index;
    ++g.owner->stats_.append_results_clamped;
    return *g.answering_up_to;
  }

  static int append(::raft_io* io, raft_io_append* req, const raft_entry entries[], unsigned n,
                    raft_io_append_cb cb) {
    group& g = group_of(io);
    WEIR_ASSERT(n > 0, "group {}: append of no entries", g.id.value());
    for (unsigned k = 0; k < n && g.first_of_term == 0; ++k)
      if (entries[k].term == g.term) g.first_of_term = g.next_index.value() + k;
    if (g.owner->on_append_) g.owner->on_append_(g.id, g.next_index.value(), entries, n);
    record::entries rec{g.next_index, entries_of(entries, n)};
    const std::uint64_t batch = g.owner->log_.add(record::log_record{g.id, std::move(rec)});
    g.next_index = log_index(g.next_index.value() + n);
    g.appends.push_back(group::pending_append{batch, req, cb});
    ++g.owner->stats_.appends;
    g.owner->schedule_turn_end();
    return 0;
  }

  static int truncate(::raft_io* io, raft_index index) {
    group& g = group_of(io);
    WEIR_ASSERT(index >= 1 && index <= g.next_index.value(), "group {}: truncate at {} with next index {}",
                g.id.value(), index, g.next_index.value());
    g.owner->log_.add(record::log_record{g.id, record::truncate{log_index(index)}});
    g.next_index = log_index(index);
    if (g.first_of_term >= index) g.first_of_term = 0;
    g.owner->schedule_turn_end();
    return 0;
  }

  static int snapshot_put(::raft_io* io, unsigned trailing, raft_io_snapshot_put* req, const raft_snapshot* s,
                          raft_io_snapshot_put_cb cb) {
    group& g = group_of(io);
    std::vector<std::byte> data;
    for (unsigned i = 0; i < s->n_bufs; ++i) {
      const auto* base = static_cast<const std::byte*>(s->bufs[i].base);
      data.insert(data.end(), base, base + s->bufs[i].len);
    }
    const auto servers = servers_of(s->configuration);
    record::snapshot rec{
        log_index(s->index), term_id(s->term), log_index(s->configuration_index), servers, trailing, data};
    const std::uint64_t batch = g.owner->log_.add(record::log_record{g.id, rec});
    std::vector<std::byte> conf;
    byte_writer w(conf);
    wire::encode_servers(servers, w);
    g.snapshot = stored_snapshot{rec.index, rec.term, rec.conf_index, std::move(conf), std::move(data)};
    if (trailing == 0) {
      g.next_index = log_index(s->index + 1);
      g.first_of_term = 0;
    }
    g.puts.push_back(group::pending_put{batch, req, cb, trailing == 0 ? s->bufs : nullptr});
    g.owner->schedule_turn_end();
    return 0;
  }

  static int snapshot_get(::raft_io* io, raft_io_snapshot_get* req, raft_io_snapshot_get_cb cb) {
    group& g = group_of(io);
    g.gets.push_back(group::pending_get{req, cb});
    g.owner->schedule_turn_end();
    return 0;
  }

  static raft_time time(::raft_io* io) {
    return static_cast<raft_time>(group_of(io).owner->raft_now());
  }

  static int random(::raft_io* io, int min, int max) {
    if (max <= min) return min;
    return std::uniform_int_distribution<int>(min, max - 1)(group_of(io).owner->rng_);
  }

  static int async_work(::raft_io* io, raft_io_async_work* req, raft_io_async_work_cb cb) {
    group& g = group_of(io);
    g.works.push_back(group::pending_work{req, cb});
    g.owner->schedule_turn_end();
    return 0;
  }
};

node_io::node_io(executor& ex, transport& t, node_log& log, options o)
    : ex_(ex), transport_(t), log_(log), opts_(std::move(o)), rng_(opts_.random_seed) {
  log_.set_on_synced([this](std::uint64_t batch, status st) { on_synced(batch, std::move(st)); });
  transport_.set_receiver([this](node_id from, std::span<const std::byte> p) { on_packet(from, p); });
}

node_io::~node_io() {
  *alive_ = false;
  if (tick_timer_ != 0) ex_.cancel_timer(tick_timer_);
  log_.set_on_synced(nullptr);
  transport_.set_receiver(nullptr);
  for (auto& [id, g] : groups_)
    WEIR_ASSERT(!g->started, "node {}: group {} still running at node_io destruction", opts_.self.value(),
                id.value());
}

void node_io::for_each_recovered_place(group_id id,
                                       const std::function<void(log_index, const entry_place&)>& fn) const {
  auto it = groups_.find(id);
  if (it == groups_.end() || !it->second->recovered) return;
  const group_state& s = *it->second->recovered;
  for (std::size_t i = 0; i < s.places.size(); ++i) fn(log_index(s.start.value() + i), s.places[i]);
}

::raft_io* node_io::io_of(group_id id) {
  auto& slot = groups_[id];
  if (!slot) {
    slot = std::make_unique<group>();
    group& g = *slot;
    g.owner = this;
    g.id = id;
    g.recovered = log_.take_group_state(id);
    ::raft_io& io = g.io;
    io.version = 2;
    io.impl = &g;
    io.init = group_io_methods::init;
    io.close = group_io_methods::close;
    io.load = group_io_methods::load;
    io.start = group_io_methods::start;
    io.bootstrap = group_io_methods::bootstrap;
    io.recover = group_io_methods::recover;
    io.set_term = group_io_methods::set_term;
    io.set_vote = group_io_methods::set_vote;
    io.send = group_io_methods::send;
    io.append = group_io_methods::append;
    io.truncate = group_io_methods::truncate;
    io.snapshot_put = group_io_methods::snapshot_put;
    io.snapshot_get = group_io_methods::snapshot_get;
    io.time = group_io_methods::time;
    io.random = group_io_methods::random;
    io.async_work = group_io_methods::async_work;
  }
  return &slot->io;
}

void node_io::schedule_turn_end() {
  if (turn_end_posted_) return;
  turn_end_posted_ = true;
  ex_.post([this, alive = alive_] {
    if (*alive) turn_end();
  });
}

// The end of a loop turn: one batch for the node log, one packet per peer, then the callbacks of the
// sends and reads that completed.
void node_io::turn_end() {
  turn_end_posted_ = false;
  log_.flush();
  for (auto& [to, out] : outbox_) {
    // Urgent first: none of them is of a group with a bulk frame before it (add_to_outbox).
    for (auto& bytes : out.urgent) {
      ++stats_.packets_sent;
      ++stats_.urgent_packets_sent;
      transport_.send_urgent(to, std::move(bytes));
    }
    out.urgent.clear();
    for (auto& bytes : out.bulk) {
      ++stats_.packets_sent;
      ++bulk_sent_[to];
      transport_.send(to, std::move(bytes));
    }
    out.bulk.clear();
  }
  for (auto& [id, gp] : groups_) {
    group& g = *gp;
    if (g.closed) continue;
    if (!g.sends.empty()) {
      auto sends = std::move(g.sends);
      g.sends = {};
      for (auto& s : sends)
        if (s.cb != nullptr) s.cb(s.req, 0);  // a transfer's TimeoutNow has none
    }
    if (!g.gets.empty()) {
      auto gets = std::move(g.gets);
      g.gets = {};
      for (auto& s : gets) {
        raft_snapshot* snap = g.snapshot ? make_snapshot(*g.snapshot) : nullptr;
        s.cb(s.req, snap, snap != nullptr ? 0 : (g.snapshot ? RAFT_NOMEM : RAFT_NOTFOUND));
      }
    }
    if (!g.works.empty()) {
      auto works = std::move(g.works);
      g.works = {};
      for (auto& w : works) w.cb(w.req, w.req->work(w.req));
    }
  }
}

void node_io::on_synced(std::uint64_t batch, status st) {
  const int rv = st ? 0 : RAFT_IOERR;
  if (!st && !log_failed_) {
    log_failed_ = true;
    log::error("raft node {}: the node log failed: {}", opts_.self.value(), st.err().reason);
    if (on_log_failure_) {
      ex_.post([this, alive = alive_, e = st.err()] {
        if (*alive && on_log_failure_) on_log_failure_(e);
      });
    }
  }
  for (auto& [id, gp] : groups_) {
    group& g = *gp;
    if (g.closed) continue;
    if (rv != 0) {
      // Neither the records of this batch nor anything depending on them may be seen.
      g.held.clear();
      for (auto& a : g.appends) WEIR_ASSERT(a.batch >= batch, "older batch {} still pending", a.batch);
      group_io_methods::fail_group(g, rv, batch);
      continue;
    }
    while (!g.held.empty() && g.held.front().fence <= batch) {
      auto& h = g.held.front();
      add_to_outbox(h.to, std::move(h.frame), &g, h.small);
      g.held.pop_front();
    }
    while (!g.puts.empty() && g.puts.front().batch <= batch) {
      auto p = g.puts.front();
      g.puts.pop_front();
      p.cb(p.req, 0);
    }
    while (!g.appends.empty() && g.appends.front().batch <= batch) {
      auto a = g.appends.front();
      g.appends.pop_front();
      a.cb(a.req, 0);
    }
  }
  schedule_turn_end();
}

void node_io::on_packet(node_id from, std::span<const std::byte> packet) {
  auto addr = opts_.addresses.find(from);
  const std::int64_t now = ex_.now_ms();
  last_packet_ms_[from] = now;
  while (!packet.empty()) {
    auto d = wire::decode_frame(packet);
    if (!d || !d->has_value()) {
      // A packet holds whole frames: a partial or malformed one means a broken peer.
      log::warn("raft node {}: dropping the rest of a packet from node {}: {}", opts_.self.value(),
                from.value(), d ? std::string("truncated frame") : d.err().reason);
      ++stats_.frames_dropped;
      return;
    }
    wire::decoded_frame& f = **d;
    packet = packet.subspan(f.consumed);
    ++stats_.frames_received;
    auto git = groups_.find(f.msg.group);
    if (addr == opts_.addresses.end() || git == groups_.end() || !git->second->started) {
      ++stats_.frames_dropped;
      continue;
    }
    group& g = *git->second;
    if (handle_transfer_frame(from, f.msg)) continue;
    raft_message m{};
    m.type = static_cast<unsigned short>(wire::type_of(f.msg.payload));
    m.server_id = from.value();
    m.server_address = addr->second.c_str();
    bool ok = true;
    std::visit(
        [&](auto& p) {
          using T = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<T, wire::append_entries>) {
            trim_below_snapshot(g, p);
            auto& a = m.append_entries;
            a.term = p.term.value();
            a.prev_log_index = p.prev_log_index.value();
            a.prev_log_term = p.prev_log_term.value();
            a.leader_commit = p.leader_commit.value();
            ok = make_entry_batch(
                     p.entries, [](const wire::entry& e) { return e.data; }, &a.entries, &a.n_entries) == 0;
          } else if constexpr (std::is_same_v<T, wire::append_entries_result>) {
            m.append_entries_result = {p.term.value(), p.rejected.value(), p.last_log_index.value()};
          } else if constexpr (std::is_same_v<T, wire::request_vote>) {
            m.request_vote = {p.term.value(),          p.candidate.value(), p.last_log_index.value(),
                              p.last_log_term.value(), p.disrupt_leader,    p.pre_vote};
          } else if constexpr (std::is_same_v<T, wire::request_vote_result>) {
            m.request_vote_result = {p.term.value(), p.vote_granted, static_cast<raft_tribool>(p.pre_vote)};
          } else if constexpr (std::is_same_v<T, wire::install_snapshot>) {
            ok = fill_install(m.install_snapshot, p);
          } else if constexpr (std::is_same_v<T, wire::timeout_now>) {
            m.timeout_now = {p.term.value(), p.last_log_index.value(), p.last_log_term.value()};
          } else {
            ok = false;  // transfer frames went to handle_transfer_frame
          }
        },
        f.msg.payload);
    if (!ok) {
      ++stats_.frames_dropped;
      continue;
    }
    if (m.type == RAFT_IO_APPEND_ENTRIES_RESULT) {
      clamp_old_term_result(g, m.append_entries_result);
      g.note_acknowledged(from, m.append_entries_result);
    }
    // libraft owns the message's allocations from here on (recv.c frees or keeps them).
    if (m.type == RAFT_IO_APPEND_ENTRIES)
      g.answering_up_to = m.append_entries.prev_log_index + m.append_entries.n_entries;
    const bool result = m.type == RAFT_IO_APPEND_ENTRIES_RESULT;
    const auto type = static_cast<std::uint8_t>(m.type);
    if (m.type == RAFT_IO_APPEND_ENTRIES) note_append_from(g, from, m.append_entries.term);
    auto h = std::find_if(g.heard.begin(), g.heard.end(), [&](const auto& p) { return p.first == from; });
    if (h == g.heard.end()) {
      g.heard.emplace_back(from, now);
    } else {
      h->second = now;
    }
    g.recv(&g.io, &m);
    g.answering_up_to.reset();
    if (result && after_append_result_) after_append_result_(f.msg.group);
    if (after_event_) after_event_(f.msg.group, group_event{from, type});
  }
}

// The margin a follower had: the longest time between two AppendEntries of one leader in one term, on
// libraft's clock (the one its election timer runs on). Above the election timeout a follower stands.
void node_io::note_append_from(group& g, node_id from, std::uint64_t term) {
  const std::int64_t now = static_cast<std::int64_t>(raft_now());
  if (g.append_from == from && g.append_term == term && g.append_ms >= 0) {
    stats_.longest_leader_silence_ms = std::max(stats_.longest_leader_silence_ms, now - g.append_ms);
  }
  g.append_from = from;
  g.append_term = term;
  g.append_ms = now;
}

std::int64_t node_io::heard_from(group_id id, node_id from) const {
  auto it = groups_.find(id);
  if (it == groups_.end()) return -1;
  for (const auto& [n, ms] : it->second->heard)
    if (n == from) return ms;
  return -1;
}

std::int64_t node_io::packet_from(node_id from) const {
  auto it = last_packet_ms_.find(from);
  return it == last_packet_ms_.end() ? -1 : it->second;
}

// libraft 0.15 rejects an AppendEntries whose prev_log_index lies below the follower's own log after a
// snapshot ("no entry at index"), although every entry a snapshot covers is committed and so matches the
// leader's log (Raft 5.4: Leader Completeness). The leader then probes down one index per heartbeat to
// below its own log, sends InstallSnapshot, gets "have all entries" with last_log_index at or below the
// match index it already has, does not leave its snapshot state, times out, and starts again: a live
// lock the simulation found. The follower's io trims such a message to start at its snapshot instead:
// prev = (snapshot index, snapshot term), minus the entries the snapshot covers. If an entry the
// message carries at the snapshot index has another term, it is left to libraft (which shuts the group
// down on a conflict with a committed entry, as it should).
void node_io::trim_below_snapshot(group& g, wire::append_entries& ae) {
  if (!g.snapshot || ae.prev_log_index.value() == 0 || ae.prev_log_index >= g.snapshot->index) return;
  const std::uint64_t snap = g.snapshot->index.value();
  const std::uint64_t prev = ae.prev_log_index.value();
  const std::uint64_t last = prev + ae.entries.size();
  if (last >= snap) {
    if (ae.entries[snap - prev - 1].term != g.snapshot->term) return;
    ae.entries.erase(ae.entries.begin(), ae.entries.begin() + static_cast<std::ptrdiff_t>(snap - prev));
  } else {
    ae.entries.clear();
  }
  ae.prev_log_index = g.snapshot->index;
  ae.prev_log_term = g.snapshot->term;
  ++stats_.append_entries_trimmed;
}

// libraft 0.15 lets a leader commit an entry of an earlier term by counting the followers that hold it
// (replicationQuorum; fixed in libraft 0.17.1, "Don't commit entries from old terms by counting"): the
// unsafe commit of Raft's Figure 8, where such an entry can still be overwritten by a later leader after
// every node applied it. The cluster simulation found it (seed 101709 of the slow run: a group's entry 7,
// written in term 4 and committed by counting in term 10, was overwritten in term 16). So a leader never
// learns that a follower holds entries above its commit index that are older than its own term: a
// success result whose last index lies below the first entry this node appended in its term (or that
// arrives before it appended any) is reported as reaching at most the leader's commit index. libraft
// then sends those entries again, the new leader's barrier among them (cluster::replicator), and the
// result that covers the barrier commits everything before it, as Raft 5.4.2 prescribes. (Holding such
// results back instead stalls a follower whose InstallSnapshot result names an index below the barrier.)
void node_io::clamp_old_term_result(const group& g, raft_append_entries_result& r) {
  if (!commit_index_of_ || r.rejected != 0 || r.term != g.term) return;
  if (g.first_of_term != 0 && r.last_log_index >= g.first_of_term) return;
  const std::uint64_t commit = commit_index_of_(g.id);
  if (r.last_log_index <= commit) return;
  r.last_log_index = commit;
  ++stats_.append_results_clamped_to_commit;
}

void node_io::ensure_tick(unsigned msecs) {
  if (tick_ms_ != 0 && msecs >= tick_ms_) return;
  tick_ms_ = msecs;
  if (tick_timer_ != 0) ex_.cancel_timer(tick_timer_);
  tick_timer_ = ex_.add_timer(std::chrono::milliseconds(tick_ms_), [this, alive = alive_] {
    if (*alive) on_tick();
  });
}

void node_io::tick_now(group_id id) {
  auto it = groups_.find(id);
  if (it == groups_.end() || !it->second->started) return;
  it->second->tick(&it->second->io);
  if (after_event_) after_event_(id, group_event{});
}

// libraft's clock: the executor's, except that of a gap between two readings longer than
// stall_allowance_ms only that much counts. libraft reads it at every tick (a heartbeat period) and
// every message, so a longer gap means this node's loop did not run (CPU starvation, a long turn, a
// stop): timers measured across it would blame peers for it. A follower would stand for election
// although its leader's messages sat unread in its socket, and a leader step down although its
// followers' answers did (seen under bursts of large appends on a loaded 2-CPU machine). Its own
// pause then counts as stall_allowance_ms; peers that kept running still time out a node that stopped.
std::uint64_t node_io::raft_now() {
  const std::int64_t real = ex_.now_ms();
  if (last_real_ms_ >= 0 && real - last_real_ms_ > stall_allowance_ms) {
    paused_ms_ += real - last_real_ms_ - stall_allowance_ms;
    ++stats_.stalls;
  }
  last_real_ms_ = std::max(last_real_ms_, real);
  return static_cast<std::uint64_t>(std::max<std::int64_t>(real - paused_ms_, 0));
}

void node_io::on_tick() {
  tick_timer_ = ex_.add_timer(std::chrono::milliseconds(tick_ms_), [this, alive = alive_] {
    if (*alive) on_tick();
  });
  for (auto& [id, g] : groups_) {
    if (!g->started) continue;
    g->tick(&g->io);
    if (after_event_) after_event_(id, group_event{});
  }
}

}  // namespace weir::raft
