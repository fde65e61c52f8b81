// replicator_group: what the replicator's files (replicator*.cc) share: one raft group's state
// (replicator::group) and the C callbacks libraft calls (group_glue). Internal to src/cluster.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "base/log.h"
#include "cluster/entry_places.h"
#include "cluster/membership.h"
#include "cluster/messages.h"
#include "cluster/replicator.h"
#include "raft/libraft.h"

namespace weir::cluster {

namespace detail {
// Membership: groups whose configuration this node changes at once (each change is one entry, and a new
// node's catch-up is a log's worth of replication), and how often the desired membership is sent again.
inline constexpr int max_changes_in_flight = 8;
inline constexpr std::int64_t change_retry_ms = 1000;
inline constexpr std::int64_t share_every_ms = 5000;
// The links' channel of cluster messages (messages.h); raft's packets go on channel 0.
inline constexpr std::uint8_t message_channel = 1;

inline const raft_server* find_server(const raft_configuration& c, std::uint64_t id) {
  for (unsigned i = 0; i < c.n; ++i)
    if (c.servers[i].id == id) return &c.servers[i];
  return nullptr;
}

inline membership_update to_message(const membership& m) {
  return membership_update{m.epoch, m.members};
}
}  // namespace detail

// One group: its libraft instance and the reads that wait for its next quorum round.
struct replicator::group {
  replicator* owner = nullptr;
  std::uint32_t id = 0;
  ::raft r{};
  raft_fsm fsm{};
  // ReadIndex on the leader: reads that arrived since the running barrier was proposed wait for the next
  // one; each keeps the commit index recorded when it arrived (0: the barrier's own index, when the
  // commit index cannot be trusted yet in this term).
  using leader_read_fn = std::function<void(bool, std::uint64_t)>;
  std::vector<std::pair<std::uint64_t, leader_read_fn>> next_reads;
  std::vector<std::pair<std::uint64_t, leader_read_fn>> barrier_reads;
  bool barrier_running = false;
  struct ::raft_barrier barrier {};
  // A barrier of this term committed: the commit index covers every entry committed before the term.
  std::uint64_t trusted_term = 0;
  // Commit notification (notify_commit()): per follower, the commit index it was last told of.
  std::map<std::uint64_t, std::uint64_t> told;
  std::uint64_t told_term = 0;
  bool notify_posted = false;
  // Entry bytes applied since the group's last snapshot (options::snapshot_bytes).
  std::size_t bytes_since_snapshot = 0;
  // The sizes of the last entries applied (at most options::snapshot_trailing of them): a snapshot keeps
  // only as many trailing entries as fit in a quarter of options::snapshot_bytes (trailing_entries()).
  std::deque<std::uint32_t> recent_sizes;
  // When a due snapshot was first put off (callbacks::snapshot_later); -1: not put off.
  std::int64_t snapshot_deferred_ms = -1;
  // When this node last applied one of the group's entries (executor time): a group that applies
  // is committing, so a proposal waiting in it is in a backlog, not cut off (replicator::sweep).
  std::int64_t last_apply_ms = 0;
  // Entries of replicator::submits_ in this group: note_stored() parses what the group stores only while
  // there are any.
  std::size_t submits = 0;
  // The term in which this node, leading the group, proposed its opening barrier (sweep()).
  std::uint64_t opened_term = 0;
  // When watch_links let this group's election timer run out early (its leader's connection closed);
  // -1: never. An election that follows is put down to that (after_event()).
  std::int64_t link_closed_ms = -1;
  // Leadership hand-over (balance()).
  struct ::raft_transfer transfer {};
  bool transferring = false;
  std::int64_t last_transfer_ms = -1'000'000;
  // Membership: the configuration change in flight (start_change()), and when to try again after one
  // failed.
  struct ::raft_change change {};
  bool changing = false;
  std::int64_t next_change_ms = 0;
  // Where the node log holds the entries stored and not yet applied (callbacks::apply's place).
  entry_places places;
};

namespace detail {
inline constexpr unsigned max_recent_sizes = 8192;  // sizes kept per group (replicator::group::recent_sizes)
inline constexpr std::int64_t max_snapshot_deferral_ms = 2000;  // callbacks::snapshot_later

// How many entries libraft keeps below a snapshot (for followers a little behind): `trailing` (the
// setting), but no more of the latest entries (`recent`, oldest first) than fit in `budget` bytes, and
// at least one. libraft keeps them in memory and the node log on disk, and counts entries only: with
// 512 KiB appends, 128 trailing entries held 64 MiB per group. With fewer sizes known than `trailing`
// (a group that applied few entries since it started, or a setting above max_recent_sizes) and all
// within budget, `trailing`.
inline unsigned trailing_entries(const std::deque<std::uint32_t>& recent, unsigned trailing,
                                 std::uint64_t budget) {
  std::uint64_t sum = 0;
  unsigned keep = 0;
  for (auto it = recent.rbegin(); it != recent.rend() && keep < trailing; ++it) {
    if (keep > 0 && sum + *it > budget) return keep;
    sum += *it;
    ++keep;
  }
  return recent.size() < trailing ? trailing : keep;
}
}  // namespace detail

// The C callbacks libraft calls.
struct group_glue {
  static int apply(raft_fsm* fsm, const raft_buffer* buf, void** result) {
    auto* g = static_cast<replicator::group*>(fsm->data);
    replicator& self = *g->owner;
    *result = nullptr;
    const std::uint64_t index = g->r.last_applied + 1;
    auto entry = decode_entry(std::span<const std::byte>(static_cast<const std::byte*>(buf->base),
                                                         static_cast<std::size_t>(buf->len)));
    if (!entry) {
      // Every node applies the same bytes, so every node skips it alike.
      log::error("weir cluster: group {} entry {}: {}; skipped", g->id, index, entry.err().reason);
      return 0;
    }
    auto [header, command] = *entry;
    std::uint64_t ticket = 0;
    if (header.origin == self.opts_.self && header.ticket != 0 && self.forget_submit(header.ticket)) {
      ticket = header.ticket;
    }
    g->last_apply_ms = self.ex_.now_ms();
    const std::optional<raft::entry_place> stored = g->places.take(index);
    if (header.kind == entry_kind::membership) {
      self.apply_membership(g->id, index, command, ticket);  // the replicator's own state machine
    } else if (stored) {
      const auto past_header =
          static_cast<std::uint32_t>(command.data() - static_cast<const std::byte*>(buf->base));
      const command_place place{stored->segment, stored->record_offset, stored->data_offset + past_header};
      self.cb_.apply(g->id, index, header.kind, command, ticket, &place);
    } else {
      self.cb_.apply(g->id, index, header.kind, command, ticket, nullptr);
    }
    self.schedule_read_check();
    self.notify_commit(*g);
    g->bytes_since_snapshot += buf->len;
    g->recent_sizes.push_back(static_cast<std::uint32_t>(buf->len));
    if (g->recent_sizes.size() > std::min(self.opts_.snapshot_trailing, detail::max_recent_sizes)) {
      g->recent_sizes.pop_front();
    }
    if (self.opts_.snapshot_threshold != 0 && g->bytes_since_snapshot >= self.opts_.snapshot_bytes) {
      // libraft counts entries only: a threshold of 1 makes it snapshot after this apply.
      raft_set_snapshot_threshold(&g->r, 1);
    }
    return 0;
  }

  // A snapshot's buffer (little-endian): u64 index, then the state the callback made. Group 0's also
  // carries the membership group 0 committed, when there is one: the index word then has its top bit set
  // (an index never does) and is followed by u32 length, membership (encode_decided: with the nodes removed).
  // Snapshots without it (older ones, or none committed yet) restore as "no membership recorded".
  static constexpr std::uint64_t has_membership = std::uint64_t(1) << 63;

  static int snapshot(raft_fsm* fsm, raft_buffer* bufs[], unsigned* n_bufs) {
    auto* g = static_cast<replicator::group*>(fsm->data);
    replicator& self = *g->owner;
    const std::uint64_t index = g->r.last_applied;
    if (self.cb_.snapshot_later && self.cb_.snapshot_later(g->id)) {
      const std::int64_t now = self.ex_.now_ms();
      if (g->snapshot_deferred_ms < 0) g->snapshot_deferred_ms = now;
      if (now - g->snapshot_deferred_ms < detail::max_snapshot_deferral_ms) {
        ++self.snapshots_deferred_;
        return RAFT_BUSY;  // libraft 0.15 takes that as "not now" and asks again at the next apply
      }
    }
    g->snapshot_deferred_ms = -1;
    auto state = self.cb_.snapshot(g->id, index);
    if (!state) {
      log::warn("weir cluster: group {}: no snapshot at {}: {}", g->id, index, state.err().reason);
      return RAFT_IOERR;
    }
    std::vector<std::byte> members;
    if (g->id == 0 && self.committed_) members = encode_decided({*self.committed_, self.departed_});
    const std::size_t head = members.empty() ? 8 : 12 + members.size();
    auto* b = static_cast<raft_buffer*>(raft_malloc(sizeof(raft_buffer)));
    if (b == nullptr) return RAFT_NOMEM;
    b->len = head + state->size();
    b->base = raft_malloc(b->len);
    if (b->base == nullptr) {
      raft_free(b);
      return RAFT_NOMEM;
    }
    auto* out = static_cast<std::byte*>(b->base);
    const std::uint64_t word = index | (members.empty() ? 0 : has_membership);
    for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>(word >> (8 * i));
    if (!members.empty()) {
      const auto len = static_cast<std::uint32_t>(members.size());
      for (int i = 0; i < 4; ++i) out[8 + i] = static_cast<std::byte>(len >> (8 * i));
      std::memcpy(out + 12, members.data(), members.size());
    }
    if (!state->empty()) std::memcpy(out + head, state->data(), state->size());
    *bufs = b;
    *n_bufs = 1;
    g->bytes_since_snapshot = 0;
    raft_set_snapshot_threshold(&g->r, self.opts_.snapshot_threshold);
    // Read by libraft when this snapshot is stored (snapshot_put, then its log's trim).
    raft_set_snapshot_trailing(&g->r, detail::trailing_entries(g->recent_sizes, self.opts_.snapshot_trailing,
                                                               self.opts_.snapshot_bytes / 4));
    ++self.snapshots_taken_;
    return 0;
  }

  struct snapshot_parts {
    std::uint64_t index = 0;
    std::optional<std::span<const std::byte>> membership;  // group 0's, when recorded
    std::size_t state_offset = 0;  // where the callbacks' state starts: what precedes it is the replicator's
    std::span<const std::byte> state;
  };
  // Splits a snapshot buffer into its parts; nullopt when malformed.
  static std::optional<snapshot_parts> split(std::span<const std::byte> data) {
    if (data.size() < 8) return std::nullopt;
    std::uint64_t word = 0;
    for (int i = 0; i < 8; ++i)
      word |= static_cast<std::uint64_t>(data[static_cast<std::size_t>(i)]) << (8 * i);
    snapshot_parts p;
    p.index = word & ~has_membership;
    p.state_offset = 8;
    if ((word & has_membership) != 0) {
      if (data.size() < 12) return std::nullopt;
      std::uint32_t len = 0;
      for (int i = 0; i < 4; ++i)
        len |= static_cast<std::uint32_t>(data[8 + static_cast<std::size_t>(i)]) << (8 * i);
      if (len > data.size() - 12) return std::nullopt;
      p.membership = data.subspan(12, len);
      p.state_offset = 12 + std::size_t(len);
    }
    p.state = data.subspan(p.state_offset);
    return p;
  }

  static int restore(raft_fsm* fsm, raft_buffer* buf) {
    auto* g = static_cast<replicator::group*>(fsm->data);
    replicator& self = *g->owner;
    // libraft hands the buffer over when the restore succeeds, and frees it itself when it fails.
    auto parts = split(std::span<const std::byte>(static_cast<const std::byte*>(buf->base), buf->len));
    std::optional<decided_membership> members;
    if (parts && parts->membership) {
      auto m = decode_decided(*parts->membership);
      if (!m) {
        log::error("weir cluster: group {}: snapshot's membership: {}", g->id, m.err().reason);
        return RAFT_MALFORMED;
      }
      members = std::move(*m);
    }
    if (!parts) {
      log::error("weir cluster: group {}: snapshot of {} bytes is malformed", g->id, buf->len);
      return RAFT_MALFORMED;
    }
    if (auto st = self.cb_.restore(g->id, parts->index, parts->state); !st) {
      log::error("weir cluster: group {}: snapshot at {} not restored: {}", g->id, parts->index,
                 st.err().reason);
      return RAFT_MALFORMED;
    }
    raft_free(buf->base);
    if (g->id == 0) {
      // Group 0's membership state is the snapshot's, as the rest of its state.
      self.committed_.reset();
      self.departed_.clear();
      if (members) {
        self.committed_ = std::move(members->committed);
        self.departed_ = std::move(members->departed);
      }
      self.soon([p = &self] { p->follow_committed(); });  // not from inside libraft (see apply)
    }
    g->bytes_since_snapshot = 0;
    ++self.snapshots_restored_;
    self.schedule_read_check();
    return 0;
  }

  struct proposal {
    struct ::raft_apply req {};
    replicator* owner = nullptr;
    std::uint64_t origin = 0;
    std::uint64_t ticket = 0;
  };

  static void applied(struct ::raft_apply* req, int status, void*) {
    std::unique_ptr<proposal> p(static_cast<proposal*>(req->data));
    if (status == 0 || p->owner->closing_) return;
    replicator& self = *p->owner;
    if (p->origin == self.opts_.self) {
      self.leadership_lost(p->ticket);
    } else if (p->ticket != 0) {
      self.send(p->origin, forward_reject{p->ticket, reject_reason::lost, 0});
    }
  }

  static void barrier_done(struct ::raft_barrier* req, int status) {
    auto* g = static_cast<replicator::group*>(req->data);
    auto reads = std::move(g->barrier_reads);
    g->barrier_reads.clear();
    g->barrier_running = false;
    if (status == 0) {
      g->trusted_term = g->r.current_term;
      g->owner->notify_commit(*g);
    }
    if (g->owner->closing_) return;
    if (status != 0) {
      // Leadership lost: libraft calls this while it tears its leader state down, still in the leader
      // state, so a new barrier now would be appended into that teardown (a crash). The reads waiting
      // for the next round fail too; their nodes retry with the new leader.
      auto waiting = std::move(g->next_reads);
      g->next_reads.clear();
      for (auto& [recorded, fn] : reads) fn(false, 0);
      for (auto& [recorded, fn] : waiting) fn(false, 0);
      return;
    }
    for (auto& [recorded, fn] : reads) fn(true, recorded != 0 ? recorded : req->index);
    if (!g->next_reads.empty()) g->owner->start_barrier(*g);
  }

  static void transferred(struct ::raft_transfer* req) {
    static_cast<replicator::group*>(req->data)->transferring = false;
  }

  // A configuration change committed (0), or failed: leadership lost, or libraft gave up catching a
  // new voter up. Called inside libraft (possibly while it tears its leader state down): the next step
  // is posted, never started here.
  static void changed(struct ::raft_change* req, int status) {
    auto* g = static_cast<replicator::group*>(req->data);
    replicator& self = *g->owner;
    g->changing = false;
    if (self.closing_) return;
    if (status != 0) {
      log::info("weir cluster: group {}: a membership change failed ({}); trying again", g->id,
                raft_strerror(status));
      g->next_change_ms = self.ex_.now_ms() + detail::change_retry_ms;
      return;
    }
    self.ex_.post([p = &self, alive = self.alive_] {
      if (*alive && !p->closing_) p->reconcile();
    });
  }

  static void closed(struct ::raft*) {}
};

}  // namespace weir::cluster
