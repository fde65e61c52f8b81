// replicator: this node's part in every raft group of the cluster. Owns the node log, the raft_io of
// all groups (raft::node_io) and one libraft instance per group, all on one event loop, and offers what
// the streams layer needs without knowing anything of streams:
//
//   * submit(group, command) -> ticket: proposes the command on the group's leader (forwarding it over
//     the peer link when that is another node). The ticket ends exactly once: in `apply` on this node,
//     when the command is committed and this node applies it (the answer then comes from this node's own
//     state, so a write made through a follower is visible on it when it is acknowledged), or in
//     `failed` (no leader within the timeout, or leadership lost with the outcome unknown).
//   * read_index(group, ready): ReadIndex (Raft thesis 6.4). The leader records its commit index, confirms
//     with a quorum that it still leads (a barrier entry, shared by every read that arrived before it
//     was proposed), and answers; this node then waits until it applied that far. A deposed or cut-off
//     leader cannot commit the barrier, so it never answers a stale read.
//   * apply: every committed command of every group, on every node, in log order, with its entry kind.
//   * call_leader(group, request) -> answer: runs a request on the group's leader (callbacks::serve there,
//     over the peer link as a leader_call) for state only the leader holds (a subscription's delivery
//     state); a node that does not lead the group answers "not the leader" and the caller tries again
//     with the leader it then knows, until submit_timeout.
//   * membership (add_member, remove_member): the nodes the cluster should consist of. A change is an
//     entry of group 0 (entry_kind::membership): every node applies it in log order against the
//     membership group 0 committed before it (cluster/membership.h, apply_change: a change made against
//     an older one is refused), and the proposing node answers once it applied it. Every node adopts
//     what group 0 committed (members_path, links to the new nodes) and sends it to its peers every few
//     seconds, which is how a node that is no voter of group 0 yet (started with `join`) learns its
//     peers; a voter of group 0 never adopts a membership from a message. The leader of each group
//     then brings the group's configuration there one change at a time (a few groups at once): a new
//     node is added as a spare, made a standby (it receives the log from index 1, without a vote), and
//     made a voter once it has caught up; a node that left is removed (a leader that is to be removed
//     hands its leadership to a voter that stays first). A node started with `join` bootstraps nothing
//     and waits to be added.
//
// Lanes (docs/replication.md, "Lanes"): a node may split its groups over `lanes` replicators, each on its
// own executor with its own node log and links: lane l runs the groups g with g % lanes == l. Lane 0
// holds group 0 and decides the membership as above; every other lane *follows* it: it makes no change
// and shares nothing, and takes what lane 0 acts on through follow() (its owner posts lane 0's
// lane_view, which lane 0 hands to set_on_view, to the other lanes' executors). Each lane's leaders
// bring their own groups to that membership. A call naming a group of another lane is refused (submit,
// call_leader and read_index fail; messages about it are ignored).
//
// Everything runs on the executor given to open() (an event loop, or the simulation's scheduler);
// nothing is thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/result.h"
#include "cluster/membership.h"
#include "cluster/messages.h"
#include "cluster/replicator_leadership.h"
#include "raft/executor.h"
#include "storage/env.h"

struct raft_entry;

namespace weir::raft {
class node_io;
class node_log;
class log_flusher;
}  // namespace weir::raft

namespace weir::cluster {

class links;

// Where a committed command's bytes sit in this node's node log: the segment, the file offset of the
// record holding its entry, and the offset of the command's first byte from the start of that record's
// body (raft::node_log::entry_place moved past the entry's header). A stream record inside the command
// may point there (raft::node_log_framing reads it) instead of being written again.
struct command_place {
  std::uint32_t segment = 0;
  std::uint64_t record_offset = 0;
  std::uint32_t offset = 0;
};

// An entry's bytes (entry header + command) in one buffer from raft_malloc: raft_apply takes the buffer
// itself, so the bytes are not copied again on their way into libraft's log (docs/replication.md, "The
// path of an append"). Empty once handed over. Move-only.
class raft_bytes {
 public:
  raft_bytes() = default;
  explicit raft_bytes(std::size_t n);  // n bytes, uninitialized; empty() on allocation failure
  raft_bytes(raft_bytes&& o) noexcept : base_(o.base_), len_(o.len_) { o.base_ = nullptr, o.len_ = 0; }
  raft_bytes& operator=(raft_bytes&& o) noexcept;
  ~raft_bytes();
  std::byte* data() { return base_; }
  std::span<const std::byte> bytes() const { return {base_, len_}; }
  std::size_t size() const { return len_; }
  bool empty() const { return base_ == nullptr; }
  // Gives the buffer up (to libraft, which frees it with raft_free).
  std::byte* release() {
    len_ = 0;
    return std::exchange(base_, nullptr);
  }

 private:
  std::byte* base_ = nullptr;
  std::size_t len_ = 0;
};

enum class submit_error : std::uint8_t {
  no_leader = 1,  // no leader could be reached in time: nothing was committed
  unknown = 2,    // proposed, then leadership was lost or time ran out: it may still commit
};

class replicator {
 public:
  struct options {
    std::uint64_t self = 0;
    std::map<std::uint64_t, std::string> addresses;  // every node (self included), as raft knows them
    std::uint32_t groups = 64;
    // This replicator's lane and the node's lane count (see the class comment): it runs the groups g
    // with g % lanes == lane.
    std::uint32_t lane = 0;
    std::uint32_t lanes = 1;
    std::string log_path;                         // the node log (one per lane)
    bool prepare_log_segments = false;            // raft::node_log_options::prepare_segments
    std::uint64_t log_segment_bytes = 64u << 20;  // raft::node_log_options::segment_bytes
    // raft::node_log::set_keep, set as the log opens (compaction may decide before open() returns).
    std::function<bool(std::uint32_t segment)> keep_log_segment;
    unsigned election_timeout_ms = 1000;
    unsigned heartbeat_ms = 100;
    std::chrono::milliseconds submit_timeout{5000};
    // A proposal still waiting at submit_timeout keeps waiting, a second at a time, while its group keeps
    // applying entries on this node (a backlog of large writes, not a lost quorum), up to this in all.
    std::chrono::milliseconds backlog_timeout{30000};
    std::chrono::milliseconds read_timeout{5000};
    // Hand leaderships over so that group g is led by the g-th node (of the ids in order, modulo their
    // count) whenever that node is connected: every node then leads about as many groups.
    bool balance_leaders = true;
    // Where this run's tickets and read ids start (0: from std::random_device). They must not repeat
    // those of an earlier run of this node: an entry it proposed before a restart may be applied after,
    // naming its old ticket, and a peer may answer a read of the earlier run. The simulation gives a
    // seeded value.
    std::uint64_t id_seed = 0;
    // Start the groups empty instead of bootstrapping them with `addresses`: this node waits to be added
    // (add_member on a member of the cluster) and then catches up from the others' logs. A node whose
    // members file exists never bootstraps either (a joined node restarted without the flag).
    bool join = false;
    // Where the desired membership is kept (<data-dir>/raft/members); empty: in memory only. A following
    // lane reads it at open (to bootstrap as lane 0 does) and never writes it.
    std::string members_path;
    // Group snapshots (callbacks::snapshot): a group takes one once it applied snapshot_threshold
    // entries or snapshot_bytes of entries since its last; libraft then drops the entries it covers
    // except the last snapshot_trailing (kept for followers a little behind). 0 threshold: no snapshots
    // (libraft and the node log keep every entry).
    unsigned snapshot_threshold = 0;
    unsigned snapshot_trailing = 512;
    std::size_t snapshot_bytes = 16u << 20;
  };
  struct callbacks {
    // A committed command of `group` at `index`; `ticket` != 0 when this node proposed it and waits.
    // `place`: where the command's bytes are in this node's node log, synced (null when unknown: an
    // entry recovered from the version-1 log file, or whose place a rewrite dropped).
    std::function<void(std::uint32_t group, std::uint64_t index, entry_kind kind,
                       std::span<const std::byte> command, std::uint64_t ticket, const command_place* place)>
        apply;
    std::function<void(std::uint64_t ticket, submit_error e)> failed;
    // A leader call for `group` (call_leader, from this node or another); `request` lives during the call
    // only. `reply` once (now or later) with the answer, or with nullopt when this node does not serve
    // the group (nothing ran: the caller asks elsewhere). Empty: every call is answered "not the leader".
    std::function<void(std::uint32_t group, std::span<const std::byte> request,
                       std::function<void(std::optional<std::vector<std::byte>>)> reply)>
        serve;
    // Group snapshots (with options::snapshot_threshold > 0). `snapshot`: the state of `group` after its
    // entry `index` was applied (called right after that apply; an error skips this snapshot). `restore`:
    // replace the group's state with one made by `snapshot` at `index` (at start, from the node log, or
    // installed from the leader); an error stops the group.
    std::function<result<std::vector<std::byte>>(std::uint32_t group, std::uint64_t index)> snapshot;
    // Optional: true to put off a snapshot that is due (libraft asks again at the group's next apply),
    // at most max_snapshot_deferral_ms from the first time it was put off. The server puts one off
    // while its data log holds many unsynced bytes: a snapshot inlines what is not durable there, and
    // under a burst those inline bytes doubled what the node log wrote (docs/replication.md, "Snapshots").
    std::function<bool(std::uint32_t group)> snapshot_later;
    std::function<status(std::uint32_t group, std::uint64_t index, std::span<const std::byte> state)> restore;
    // The node log failed to write or sync a batch (raft::node_io::set_on_log_failure): no group can
    // make progress on this node any more; stop it (a restart recovers). Called once.
    std::function<void(const error&)> log_failed;
  };

  // `flusher` writes and syncs the node log's batches (raft::thread_flusher in production).
  static result<std::unique_ptr<replicator>> open(raft::executor& ex,
                                                  std::unique_ptr<raft::log_flusher> flusher,
                                                  storage::env& env, links& l, options o, callbacks cb);
  ~replicator();
  replicator(const replicator&) = delete;
  replicator& operator=(const replicator&) = delete;

  // Proposes `command` (an entry of `kind`) in `group`, on its leader: forwarded there from a follower.
  // With `here_only` it is proposed only while this node leads the group, never forwarded, and fails
  // with no_leader otherwise: for entries only the group's leader makes, which raft then orders before
  // those of any later leader (a forwarded retry could land after them).
  std::uint64_t submit(std::uint32_t group, std::span<const std::byte> command,
                       entry_kind kind = entry_kind::streams, bool here_only = false);
  // Runs `request` on the group's leader (callbacks::serve there; here when this node leads it) and
  // hands `done` its answer; an error when no leader answered within submit_timeout (the request may
  // have run).
  void call_leader(std::uint32_t group, std::vector<std::byte> request,
                   std::function<void(result<std::vector<std::byte>>)> done);
  // `ready(true)`: this node applied everything committed before the call; `ready(false)`: no leader
  // confirmed in time (the read must not be served).
  void read_index(std::uint32_t group, std::function<void(bool)> ready);

  // Membership changes (cluster/membership.h), taken by any node that knows the membership. `done` is
  // called once, on the executor, never inside the call: with the membership the change made, once this
  // node applied its group 0 entry; or with membership_errc::invalid (a change that cannot be made),
  // stale (group 0 decided another change first: nothing was changed), unknown (this node has not
  // joined yet), no_quorum (group 0 unreachable: nothing was changed) or outcome_unknown.
  using membership_done = std::function<void(result<membership>)>;
  void add_member(std::uint64_t id, std::string_view address, membership_done done);
  void remove_member(std::uint64_t id, membership_done done);
  // What this node acts on. Epoch 0: no change was ever asked for (the groups keep their bootstrap
  // configuration).
  const membership& desired_membership() const { return desired_; }

  // Lanes. What lane 0 acts on, for the lanes that follow it: the desired membership, whether this run's
  // group 0 caught up with the decisions (reconcile() waits for it), whether this node left, and the
  // nodes its groups' configurations hold (a leaving node stays in group 0 while another lane's groups
  // still hold it, as it does while lane 0's other groups do).
  struct lane_view {
    membership desired;
    bool current = false;
    bool left = false;
    bool operator==(const lane_view&) const = default;
  };
  // Lane 0: `fn` gets the view at once and whenever it changes (on this executor).
  void set_on_view(std::function<void(const lane_view&)> fn);
  // A following lane: acts on lane 0's view (links to its members, brings its groups there).
  void follow(const lane_view& v);
  // A following lane: `fn` gets the nodes its groups' configurations hold whenever that set changes
  // (checked every second), for lane 0's configured_elsewhere().
  void set_on_configured(std::function<void(const std::set<std::uint64_t>&)> fn);
  // Lane 0: the nodes another lane's configurations hold (its set_on_configured, posted here).
  void configured_elsewhere(std::uint32_t lane, std::set<std::uint64_t> nodes);
  // Wires a node's lanes together (lane 0 first): lane 0's view goes to every other lane's follow(), and
  // their configurations to lane 0's configured_elsewhere(), each through `post`, which runs a task on
  // the receiving lane's executor (its loop). Nothing to do for one lane.
  struct lane_port {
    replicator* r = nullptr;
    std::function<void(std::function<void()>)> post;
  };
  static void connect_lanes(const std::vector<lane_port>& lanes);
  std::uint32_t lane() const { return opts_.lane; }
  bool owns(std::uint32_t gi) const { return find(gi) != nullptr; }
  // What group 0's log has decided, as far as this node applied it (restored with group 0's snapshot);
  // nullopt: no change went through raft yet.
  const std::optional<membership>& committed_membership() const { return committed_; }
  // Group 0's log, as far as this node applied it, removed this node (and it knows no later membership):
  // it takes no request any more. Never true of a node that waits to be added (it applied no decision
  // without it that is newer than the one it acts on).
  // A member's farewell (on_membership_message) says so too, until a newer decision adds it back.
  bool left() const {
    if (opts_.lane != 0) return followed_left_;
    if (told_left_epoch_ > desired_.epoch) return true;
    return desired_.epoch > 0 && !desired_.members.contains(opts_.self) && committed_ &&
           committed_->epoch >= desired_.epoch;
  }
  // The nodes this node links to (self excluded) and their peer addresses.
  const std::map<std::uint64_t, std::string>& peer_addresses() const { return known_; }

  std::uint32_t group_count() const { return opts_.groups; }
  std::uint64_t self() const { return opts_.self; }
  bool leads(std::uint32_t group) const;
  // The term this node leads `group` in; nullopt while it does not lead it.
  std::optional<std::uint64_t> leader_term(std::uint32_t group) const;
  // The index of the last entry of `group` this node applied (0 for a group of another lane).
  std::uint64_t applied_index(std::uint32_t group) const;

  struct group_status {
    std::uint32_t group = 0;
    std::uint64_t leader = 0;
    const char* role = "";
    std::uint64_t term = 0;
    std::uint64_t commit_index = 0;
    std::uint64_t applied_index = 0;
    std::uint64_t last_index = 0;
    std::vector<std::uint64_t> voters;      // the group's configuration as this node knows it
    std::vector<std::uint64_t> non_voters;  // standbys and spares: nodes being added
    bool changing = false;                  // this node leads the group and changes its configuration
  };
  std::vector<group_status> status() const;  // this lane's groups
  // Elections and leadership changes of this node's groups since it started (replicator_leadership.h).
  const leadership_counts& leadership() const { return leadership_->counts(); }
  // Check-quorum contacts this node's leaders took from a voter's other frames (vouch_contacts).
  std::uint64_t contacts_vouched() const { return contacts_vouched_; }
  // Every group of this lane has a leader this node can reach (itself or a peer with a live link), and
  // this node reaches a majority of the group's voters.
  bool has_quorum() const;
  // Group snapshots taken, and restored (at start or installed from a leader), since open.
  std::uint64_t snapshots_taken() const { return snapshots_taken_; }
  std::uint64_t snapshots_deferred() const { return snapshots_deferred_; }  // times put off (snapshot_later)
  std::uint64_t snapshots_restored() const { return snapshots_restored_; }
  // InstallSnapshot messages sent to peers that were too far behind.
  std::uint64_t snapshots_sent() const;
  // The I/O of this node's groups: where chunked snapshot transfers plug in
  // (raft::node_io::set_snapshot_transfers, replica/snapshot_transfer.h).
  raft::node_io& io() { return *io_; }
  raft::node_log& log() { return *log_; }
  const raft::node_log& log() const { return *log_; }
  // Where the callbacks' state (callbacks::snapshot's) starts in a snapshot buffer libraft holds; what
  // precedes it is the replicator's own. nullopt when malformed.
  static std::optional<std::size_t> snapshot_state_offset(std::span<const std::byte> data);
  // The node log (raft::node_log): what it holds on disk, what the groups need of it, and compaction.
  struct log_figures {
    std::uint64_t disk_bytes = 0;
    std::uint64_t live_bytes = 0;
    std::uint64_t segments = 0;
    std::uint64_t bytes_written = 0;
    std::uint64_t batches_synced = 0;
    std::uint64_t bytes_reclaimed = 0;
    std::uint64_t segments_deleted = 0;
    std::uint64_t entries_carried = 0;
  };
  log_figures node_log_figures() const;

  struct group;  // replicator.cc

 private:
  replicator(raft::executor& ex, links& l, options o, callbacks cb);
  friend struct group_glue;

  struct pending_submit {
    std::uint32_t group = 0;
    // Header + command, until this node's libraft takes it (propose); forwarded to a leader from here.
    raft_bytes entry;
    std::int64_t deadline_ms = 0;   // executor time
    std::int64_t started_ms = 0;    // executor time of submit()
    bool proposed = false;          // handed to a leader that accepted it (a retry could apply it twice)
    std::uint64_t proposed_to = 0;  // that leader (this node, or the one it was forwarded to)
    bool retry_armed = false;
    bool here_only = false;  // submit(here_only): never forwarded
    std::uint64_t index =
        0;  // where this node's log last stored the entry (0: not seen; node_io::set_on_append)
  };
  struct pending_call {
    std::uint32_t group = 0;
    std::vector<std::byte> request;
    std::function<void(result<std::vector<std::byte>>)> done;
    std::int64_t deadline_ms = 0;  // executor time
  };
  struct pending_read {
    std::uint32_t group = 0;
    std::function<void(bool)> ready;
    std::int64_t deadline_ms = 0;  // executor time
    std::uint64_t index = 0;       // once known: wait until applied
    bool have_index = false;
  };

  // This lane's group `gi`; nullptr when it is another lane's, or no group.
  group* find(std::uint32_t gi) const;
  bool decides() const { return opts_.lane == 0; }  // lane 0: group 0, the membership
  void publish_view();                              // lane 0: on_view_, when the view changed
  void report_configured();                         // a following lane: on_configured_, when it changed
  // Timers and posted tasks that do nothing once the replicator is gone (its executor may run on).
  void after(std::chrono::milliseconds delay, std::function<void()> fn);
  void soon(std::function<void()> fn);
  void try_submit(std::uint64_t ticket);
  // Proposes `entry` (header + command) to this node's libraft when it leads `group`: the buffer goes to
  // libraft (entry is left empty) once raft_apply took it; otherwise it stays and the proposal is
  // retried or rejected.
  void propose(std::uint32_t group, raft_bytes& entry, std::uint64_t origin, std::uint64_t ticket);
  void try_read(std::uint64_t id);
  void try_call(std::uint64_t id);
  void retry_call(std::uint64_t id);
  void finish_call(std::uint64_t id, result<std::vector<std::byte>> answer);
  // Leader side of ReadIndex: `done(ok, index)` after a quorum round that started after this call.
  void leader_read(std::uint32_t group, std::function<void(bool, std::uint64_t)> done);
  void start_barrier(group& g);
  void on_message(std::uint64_t from, std::span<const std::byte> bytes);
  void send(std::uint64_t to, const message& m);
  // An entry this node proposed (or forwarded) lost its leader before it committed.
  void leadership_lost(std::uint64_t ticket);
  void resolve_failed(std::uint64_t ticket, submit_error e);
  bool forget_submit(std::uint64_t ticket);  // erases it from submits_ (and its group's count); false: none
  void check_reads();
  void schedule_read_check();
  // On a leader whose commit index moved: tell the followers at once (end of this loop turn).
  void notify_commit(group& g);  // once per loop turn in which something was applied
  void arm_sweep();
  void sweep();
  void note_stored(std::uint32_t group, std::uint64_t first, const ::raft_entry* entries, unsigned n);
  void open_terms();
  // After each tick or message of a group (raft::node_io's after-event hook): logs and counts what
  // changed in its leadership, and why.
  void after_event(std::uint32_t group, std::uint64_t from, std::uint8_t type);
  std::string quorum_detail(std::uint32_t group) const;
  void balance();
  // Followers of a leader whose connection closed stand for election within 50-500 ms.
  void watch_links();
  std::uint64_t leader_of(std::uint32_t group) const;
  // peer -> both connections up, and at most `max_queued` bytes queued for it.
  std::map<std::uint64_t, bool> links_up(std::uint64_t max_queued = UINT64_MAX) const;
  // Membership (see the class comment).
  result<membership> current_membership() const;
  void propose_change(membership_change c, membership_done done);
  void propose_after_read(bool read, membership_change c, membership_done done);
  // A membership entry of group 0, applied (every node, log order).
  void apply_membership(std::uint32_t group, std::uint64_t index, std::span<const std::byte> command,
                        std::uint64_t ticket);
  void finish_change(std::uint64_t ticket, result<membership> outcome);
  void follow_committed();  // adopts committed_ when it is newer than desired_
  bool votes_in_group0() const;
  bool in_another_group(std::uint64_t id) const;  // a group other than 0 has `id` in its configuration
  void on_membership_message(std::uint64_t from, membership theirs);
  void on_stranger(std::uint64_t id);  // links refused node `id`: tell it it left, if it was removed
  weir::status adopt(const membership& m);
  void share_membership();
  // Every heartbeat interval: the groups this node leads, with their terms, to every peer on the urgent
  // lane (messages.h, `leading`); and a peer's, received: its followers' election timers restart
  // (docs/replication.md, "Elections").
  void announce_leading();
  void on_leading(std::uint64_t from, const leading& l);
  // Every sweep: a voter heard from (any frame, either channel) in the last heartbeat interval counts,
  // in every group this node leads, as a contact for libraft's check-quorum (docs/replication.md,
  // "Elections").
  void vouch_contacts();
  std::int64_t last_frame_from(std::uint64_t node) const;
  void link_peer(std::uint64_t id, const std::string& address);
  void sync_peers();                   // links to the nodes of every configuration, unlinks the nodes of none
  bool settled(const group& g) const;  // the configuration is the desired membership, all voters
  void reconcile();
  bool start_change(group& g);

  raft::executor& ex_;
  links& links_;
  options opts_;
  callbacks cb_;
  std::unique_ptr<raft::log_flusher> flusher_;
  std::unique_ptr<raft::node_log> log_;
  std::unique_ptr<raft::node_io> io_;
  std::vector<std::unique_ptr<group>> groups_;
  std::uint64_t next_ticket_ = 1;
  std::uint64_t next_read_ = 1;
  std::unordered_map<std::uint64_t, pending_submit> submits_;
  std::unordered_map<std::uint64_t, pending_read> reads_;
  std::unordered_map<std::uint64_t, pending_call> calls_;
  raft::executor::timer_id sweep_timer_ = 0;
  std::int64_t next_balance_ms_ = 0;
  std::map<std::uint64_t, bool> peer_up_;  // per peer: its connection to this node was up (watch_links)
  std::mt19937_64 rng_;                    // seeded from options::id_seed (or at random)
  raft::executor::timer_id read_poll_timer_ = 0;
  bool read_check_posted_ = false;
  bool closing_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for tasks posted to the executor
  storage::env* env_ = nullptr;
  membership desired_;
  std::optional<membership> committed_;  // group 0's membership state (see committed_membership())
  departures departed_;                  // the nodes group 0's decisions removed (with committed_)
  std::map<std::uint64_t, std::int64_t>
      strangers_told_;  // removed node -> when it was last linked to tell it
  std::unordered_map<std::uint64_t, membership_done> changes_;  // ticket -> its client, on this node
  // This run's group 0 applied every decision made before one ReadIndex (reconcile() waits for it).
  bool membership_current_ = false;
  bool membership_checking_ = false;
  std::map<std::uint64_t, std::string> known_;  // linked peers -> address
  std::set<std::uint64_t> farewells_;           // gone peers told they left, unlinked at the next sync
  std::uint64_t told_left_epoch_ = 0;           // a member's farewell: this node left at that epoch
  std::int64_t next_share_ms_ = 0;
  std::int64_t next_leading_ms_ = 0;
  std::map<std::uint64_t, std::int64_t> message_ms_;  // when each peer's last cluster message arrived
  std::uint64_t contacts_vouched_ = 0;                // check-quorum contacts set by vouch_contacts
  std::uint64_t snapshots_taken_ = 0;
  std::uint64_t snapshots_deferred_ = 0;
  std::uint64_t snapshots_restored_ = 0;
  std::unique_ptr<leadership_watch> leadership_;
  // Lanes: lane 0's view as last published, and where it goes; a following lane's left(), and what it
  // last reported of its configurations; lane 0's record of the other lanes' configurations.
  std::function<void(const lane_view&)> on_view_;
  std::optional<lane_view> published_;
  bool followed_left_ = false;
  std::function<void(const std::set<std::uint64_t>&)> on_configured_;
  std::optional<std::set<std::uint64_t>> reported_;
  std::map<std::uint32_t, std::set<std::uint64_t>> configured_elsewhere_;
};

}  // namespace weir::cluster
