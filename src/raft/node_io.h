// node_io: weir's own `struct raft_io` for MANY raft groups on one node, all on one executor (one event
// loop; one node_io per core, later). It owns no group logic: libraft does the consensus, node_io does
// the I/O of every group of the node:
//
//   * one node log with group commit (node_log.h): the entries, terms and votes of all groups go into one
//     batch and one sync per loop turn; append callbacks fire after that sync;
//   * set_term / set_vote return at once, buffered into the batch; every message the group sends after
//     them is held until that batch is durable (libraft sends right after they return, and a vote or a
//     term must never reach another node before it is on disk);
//   * one transport link per peer node; the frames of all groups of one loop turn go out together, in
//     two lanes (below);
//   * one tick timer for the whole node; time and randomness from the executor and a seeded generator.
//
// Lanes. A group's small messages (heartbeats: AppendEntries without entries; AppendEntries results;
// votes and their results; TimeoutNow) go in the transport's urgent lane, ahead of the megabytes of
// other groups' entries queued for the same peer (peer_links gives the lane its own connection, so
// they wait neither for those nor for what the kernel holds of them), unless the group itself has a
// frame in the bulk lane to that peer that the transport has not let go yet (this turn's, or a packet
// still queued: counted with transport::bulk_queued). Then they follow it in the bulk lane: a
// heartbeat must not overtake its own group's entries (libraft's follower rejects an AppendEntries
// past its log, and the leader's probe then sends the whole tail again). For the same reason a
// heartbeat whose prev_log_index is past what the peer has acknowledged in the term (an accepting
// AppendEntries result) takes the bulk lane too: entries let go by the transport may still be in the
// bulk connection. (A follower's election timer does not wait for it: the replicator's `leading`
// message, urgent, restarts it.) Entries, snapshots and transfer chunks go in the bulk lane, except
// an AppendEntries that carries only barriers (a new leader's first entry of its term) of a few bytes:
// until it arrives the followers know no leader in that term, and under a burst it waited behind other
// groups' megabytes longer than their election timers ran.
//
// Lifetime: create the node_io, then for each group call io_of(g) and hand the result to raft_init();
// raft_close() every group (its callback fires synchronously) before destroying the node_io.
// Runs on its executor's thread only; nothing here is thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "raft/executor.h"
#include "raft/node_log.h"
#include "raft/transport.h"
#include "raft/types.h"
#include "raft/wire_format.h"

struct raft_io;
struct raft_append_entries_result;
struct raft_entry;

namespace weir::raft {

class node_io {
 public:
  struct options {
    node_id self;
    // Every node of the cluster (self included) and the address libraft knows it by; frames from a node
    // without one are dropped.
    std::map<node_id, std::string> addresses;
    std::uint64_t random_seed = 1;
  };

  struct stats {
    std::uint64_t frames_sent = 0;
    std::uint64_t packets_sent = 0;
    std::uint64_t urgent_packets_sent = 0;  // of them, in the urgent lane
    std::uint64_t frames_held = 0;          // frames that waited for a term/vote sync
    std::uint64_t frames_received = 0;
    std::uint64_t frames_dropped = 0;  // malformed, unknown group or sender, group not running
    std::uint64_t appends = 0;
    std::uint64_t append_results_clamped = 0;            // see clamp_append_result in node_io.cc
    std::uint64_t append_entries_trimmed = 0;            // see trim_below_snapshot in node_io.cc
    std::uint64_t append_results_clamped_to_commit = 0;  // see clamp_old_term_result in node_io.cc
    std::uint64_t snapshots_sent = 0;                    // InstallSnapshot messages sent (after expansion)
    std::uint64_t snapshots_unsent = 0;                  // dropped: expansion failed or frame too large
    std::uint64_t stalls = 0;  // gaps in libraft's clock longer than stall_allowance_ms (raft_now)
    std::uint64_t transfer_frames_dropped = 0;  // chunks, acks, installs with no handler
    // The longest a follower here went without an AppendEntries from its leader (same leader, same
    // term), on libraft's clock: how close the groups came to an election timeout.
    std::int64_t longest_leader_silence_ms = 0;
  };

  node_io(executor& ex, transport& t, node_log& log, options o);
  ~node_io();
  node_io(const node_io&) = delete;
  node_io& operator=(const node_io&) = delete;

  // The raft_io of group `g`, created on first call with the group's recovered state; its address is
  // stable until the node_io is destroyed.
  ::raft_io* io_of(group_id g);
  // Where the node log holds the entries it recovered for group `g` (after io_of, until libraft loads
  // them at raft_start): `fn(index, place)` for each.
  void for_each_recovered_place(group_id g,
                                const std::function<void(log_index, const entry_place&)>& fn) const;

  // Runs group `g`'s libraft tick now (libraft's rules are time-based, so an extra tick only acts on
  // what is due). A leader that wants its followers to learn a new commit index at once marks their
  // last send as old and ticks (cluster::replicator).
  void tick_now(group_id g);
  // Called after libraft took in an AppendEntries result for group `g` (a follower's match index may
  // have moved): where a leader learns that a follower can now be told of a commit index.
  void set_after_append_result(std::function<void(group_id)> fn) { after_append_result_ = std::move(fn); }
  // Called when libraft hands group `g` entries to store (a leader's own, or a follower's from its
  // leader), with the index of the first: where a node learns at which index an entry it proposed or
  // forwarded sits (cluster::replicator: a proposal whose index the group applied without it was lost).
  using append_observer =
      std::function<void(group_id, std::uint64_t first, const raft_entry* entries, unsigned n)>;
  void set_on_append(append_observer fn) { on_append_ = std::move(fn); }
  // The group's commit index as libraft knows it: with it, a leader is kept from committing entries of
  // earlier terms by counting (libraft 0.15's Figure 8 bug; see clamp_old_term_result in node_io.cc).
  // Unset: results reach libraft as they came.
  void set_commit_index_source(std::function<std::uint64_t(group_id)> fn) {
    commit_index_of_ = std::move(fn);
  }
  // What just ran in group `g`: its tick (from == 0) or the handling of a message of `type` (a wire
  // message_type) from `from`. Called right after libraft returns, so the observer sees the state that
  // event left (cluster::replicator logs and counts leadership changes from it).
  struct group_event {
    node_id from;           // 0: a tick
    std::uint8_t type = 0;  // the message's wire::message_type (when from != 0)
  };
  void set_after_event(std::function<void(group_id, const group_event&)> fn) { after_event_ = std::move(fn); }
  // When (executor ms) this node last received a raft message of group `g` from `from`, and any packet
  // from `from`; -1: never. Why a follower's election timer ran out, or a leader lost its quorum.
  std::int64_t heard_from(group_id g, node_id from) const;
  std::int64_t packet_from(node_id from) const;

  // Chunked snapshot transfers (docs/replication.md, "Snapshots"). An InstallSnapshot, owned: what
  // libraft sends (peer: the receiver) or what arrived naming a transfer (peer: the sender).
  struct snapshot_install {
    group_id group;
    node_id peer;
    term_id term;
    log_index last_index;
    term_id last_term;
    log_index conf_index;
    std::vector<std::byte> conf;  // wire::encode_servers form
    std::uint64_t transfer = 0;   // 0: `data` is self-contained
    std::uint32_t chunks = 0;
    std::vector<std::byte> data;  // libraft's snapshot buffer
  };
  // Who moves a snapshot's data-log records to a peer (replica/snapshot_transfer.h). With one set, libraft's
  // InstallSnapshot goes to `send` instead of the wire (its send callback completes at once, the message
  // being copied); the handler sends chunks (send_chunk) and then the install (send_install). Chunks,
  // acks and installs that name a transfer arrive at `on_chunk`, `on_chunk_ack`, `on_install`; the
  // handler hands a relocated install to libraft with deliver_install. All on the executor's thread.
  class snapshot_transfers {
   public:
    virtual ~snapshot_transfers() = default;
    virtual void send(snapshot_install install) = 0;
    virtual void on_chunk(node_id from, group_id g, const wire::snapshot_chunk& c) = 0;
    virtual void on_chunk_ack(node_id from, group_id g, const wire::snapshot_chunk_ack& a) = 0;
    virtual void on_install(snapshot_install install) = 0;
  };
  // Set before the groups start; null: InstallSnapshot goes out as one frame (expanded if an expander
  // is set), and frames of transfers are dropped.
  void set_snapshot_transfers(snapshot_transfers* t) { transfers_ = t; }
  // Queue a frame of a transfer for `to` (sent at the end of this loop turn, after anything queued before).
  void send_chunk(node_id to, group_id g, wire::snapshot_chunk c);
  void send_chunk_ack(node_id to, group_id g, wire::snapshot_chunk_ack a);
  // The install that ends a transfer (or a snapshot without references: transfer 0), to install.peer;
  // false when the group does not run or the frame would be too large (logged, snapshots_unsent).
  bool send_install(const snapshot_install& s);
  // Hands an install (its data relocated to this node, transfer 0) to libraft as if it had just
  // arrived from install.peer; false when the group does not run here or the sender is unknown.
  bool deliver_install(const snapshot_install& s);
  // Called once (posted to the executor) when a batch of the node log fails to be written or synced:
  // the log is poisoned from then on (every later batch fails, every group's pending appends fail), and
  // the node cannot go on; the caller stops it (a restart recovers from what is on disk).
  void set_on_log_failure(std::function<void(const error&)> fn) { on_log_failure_ = std::move(fn); }

  // A turn's frames for one peer leave in packets of at most this many bytes (a larger frame alone, in
  // its own packet), in order. The receiver handles a packet only once all of it arrived, and all of it
  // at once: a turn's frames for a peer under a burst of 512 KiB entries made packets of 2-5 MiB, each
  // handled in one go (200-470 ms on a starved CPU, heartbeats of other groups behind the entries).
  static constexpr std::size_t max_packet_bytes = 1u << 20;
  // A frame of at least this many bytes goes in a packet of its own, and a packet that reached it takes
  // no more frames: coalescing saves little per large frame and would copy its bytes again.
  static constexpr std::size_t own_packet_bytes = 32u << 10;

  node_id self() const { return opts_.self; }
  // Membership changes at run time: a node that joins gets an address (its frames are taken from then
  // on), one that left loses it (its frames are dropped, like a stranger's).
  void set_address(node_id id, std::string address) { opts_.addresses[id] = std::move(address); }
  void remove_address(node_id id) { opts_.addresses.erase(id); }
  const stats& counters() const { return stats_; }

  struct group;  // one group's I/O state (node_io.cc)

 private:
  friend struct group_io_methods;

  void schedule_turn_end();
  void turn_end();
  void on_synced(std::uint64_t batch, status st);
  void on_packet(node_id from, std::span<const std::byte> packet);
  // `small`: the message may take the urgent lane ("Lanes" above).
  void queue_frame(group& g, node_id to, std::vector<std::byte> frame, bool small);
  // Appends `frame` to this turn's last packet for `to` in its lane, or starts a packet (see
  // max_packet_bytes). `g`: the group whose frame it is (null: a transfer's, always bulk).
  void add_to_outbox(node_id to, std::vector<std::byte>&& frame, group* g, bool small);
  // Whether a bulk frame of `g` for `to` has not left the transport's queue yet.
  bool bulk_pending(const group& g, node_id to) const;
  // Frames of snapshot transfers go to transfers_ (true: the frame was one; handled or dropped).
  bool handle_transfer_frame(node_id from, const wire::message& msg);
  void note_append_from(group& g, node_id from, std::uint64_t term);
  void send_chunk_frame(node_id to, const wire::message& m);
  void trim_below_snapshot(group& g, wire::append_entries& ae);
  void clamp_old_term_result(const group& g, raft_append_entries_result& r);
  void ensure_tick(unsigned msecs);
  void on_tick();
  std::uint64_t raft_now();

  executor& ex_;
  transport& transport_;
  node_log& log_;
  options opts_;
  std::mt19937_64 rng_;
  std::map<group_id, std::unique_ptr<group>> groups_;
  struct lanes {
    std::vector<std::vector<std::byte>> urgent, bulk;
  };
  std::map<node_id, lanes> outbox_;  // this turn's packets, per peer
  // Bulk packets handed to the transport, per peer, since the start (numbers group::bulk_upto).
  std::map<node_id, std::uint64_t> bulk_sent_;
  bool turn_end_posted_ = false;
  unsigned tick_ms_ = 0;
  executor::timer_id tick_timer_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  stats stats_;
  std::function<void(group_id)> after_append_result_;
  append_observer on_append_;
  snapshot_transfers* transfers_ = nullptr;
  std::function<std::uint64_t(group_id)> commit_index_of_;
  std::function<void(const error&)> on_log_failure_;
  std::function<void(group_id, const group_event&)> after_event_;
  std::map<node_id, std::int64_t> last_packet_ms_;
  bool log_failed_ = false;
  // libraft's clock (raft_now): executor time minus the part of this node's stalls beyond the allowance.
  static constexpr std::int64_t stall_allowance_ms = 250;
  std::int64_t last_real_ms_ = -1;
  std::int64_t paused_ms_ = 0;
};

}  // namespace weir::raft
