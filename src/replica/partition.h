// partition: the streams of one shard (a core of a single node, a lane of a cluster node) below the
// HTTP front. Owns the shard's state machine, its local commit path (the write-ahead log, shard_wal),
// the places its bytes live (the hot tier in memory, the log's segments, a cluster node's data log),
// its checkpoints, the rebuild after a failed log write, and the reads of data that left memory (off
// the loop, on the node's cold_reader threads).
//
// What it needs from the node is its host (partition_host): told when a command's effects are due and
// when held writes may go on. It knows commands, outcomes and read plans; it includes nothing of HTTP or
// of the protocol layer (checked by src/replica/CMakeLists.txt), so it is built directly by unit tests
// and by the simulations.
//
// Lives on one executor (raft::executor: an event loop's in the server, the simulation's scheduler in
// tests): every method runs there, the writer's and the cold reads' completions are posted there, and
// its timers are that executor's; stream_count() may be read from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/metrics.h"
#include "raft/executor.h"
#include "replica/checkpointer.h"
#include "replica/commit_path.h"
#include "replica/errc.h"
#include "replica/shard_wal.h"
#include "storage/env.h"
#include "storage/log_writer.h"
#include "storage/segment_reader.h"
#include "streams/state_machine.h"
#include "tier/cold_index.h"
#include "tier/cold_reader.h"
#include "tier/data_log.h"
#include "tier/hot_tier.h"
#include "tier/uploader.h"

namespace weir::replica {

class cold_mover;
struct cold_mover_options;
class cold_snapshots;
struct cold_snapshot_options;
class cluster_cold_snapshots;
struct cold_snapshot_io;

struct partition_options {
  std::uint32_t core = 0;                         // the shard's index (its log is <data>/wal/core-N)
  std::size_t hot_bytes = 256ull << 20;           // stream data kept in memory (hot_tier)
  std::uint64_t checkpoint_bytes = 256ull << 20;  // log growth between checkpoints; 0: never
  // Cold reads (plans with slices to read from disk) in flight with the cold_reader at once, and how
  // many more may wait before read_cold refuses new ones (the caller answers 503 with Retry-After). A
  // read in flight holds at most a read chunk (or one record) of bytes; a waiting one only its plan.
  std::size_t max_cold_reads = 8;
  std::size_t max_cold_waiting = 1024;
  // Reads from the bucket (cold tier) in flight at once; a new client read beyond it is refused (503).
  std::size_t max_object_reads = 32;
};

// What a partition tells the node it runs in. Called on the partition's executor.
class partition_host {
 public:
  virtual ~partition_host() = default;
  // A command of the local commit path is durable: carry out its effects (wake live readers, report
  // stream events, release fork references). Runs before the command's own completion.
  virtual void on_durable(const streams::outcome& o) = 0;
  // The state was rebuilt from the log after a failed write: live readers re-read.
  virtual void on_rebuilt() = 0;
  // A checkpoint that held writes back is written: the held writes may go on.
  virtual void on_writes_resumed() = 0;
};

class partition {
 public:
  using completion = shard_wal::completion;

  partition(raft::executor& ex, const clock_source& clock, partition_options opts, partition_host& host);
  ~partition();
  partition(const partition&) = delete;
  partition& operator=(const partition&) = delete;

  raft::executor& executor() { return *ex_; }
  const partition_options& options() const { return opts_; }
  streams::state_machine& machine() { return sm_; }
  const streams::state_machine& machine() const { return sm_; }
  std::int64_t now_ms() const { return clock_->wall_ms(); }

  // Start-up, before the log is replayed: where this shard's log lives (`dir` in `e`) and where the
  // cold data of every shard can be read back (readers: indexed by shard, owned by the caller, outliving
  // the partition).
  void attach_segments(storage::env& e, std::string dir, std::vector<storage::segment_reader*> readers);
  // Start-up, before the loop runs: log every command to `writer` from now on; `last`: the lsn of the
  // last record recovery replayed (storage::recovered_log::next_lsn - 1).
  void attach_wal(std::unique_ptr<storage::log_writer> writer, storage::lsn last = storage::lsn{0});

  // The commit path the shard's commands take (commit_path.h): this partition's own log until a cluster
  // node gives it its raft lane (use_commit_path, before the loop runs; `p` outlives the partition).
  commit_path& commit() { return *commit_; }
  void use_commit_path(commit_path& p) { commit_ = &p; }

  // The local commit path: applies `c` to the state machine at once, logs it if it changed state, and
  // once its record is durable admits its bytes to the hot tier, tells the host (on_durable) and runs
  // `done`, in the order commands were submitted. Returns the outcome at once (for callers that only
  // need to know whether the stream exists).
  streams::outcome submit(const streams::command& c, completion done = {});

  // The cold tier's index of this partition (replica/cold_state.h): which stream bytes live in which
  // objects of the bucket. Replicated state, like the state machine.
  tier::cold_index& cold_index() { return cold_index_; }
  const tier::cold_index& cold_index() const { return cold_index_; }
  // The local commit path: applies an index record (tier::encode_index_record) to the cold index at
  // once and logs it in order with the commands when it recorded anything; `done` (not empty) then runs
  // once it is durable (or failed: then the state is rebuilt from the log, which does not hold it).
  // Returns what applying it did; an undecodable record is an error and changes nothing.
  result<tier::cold_apply_result> submit_index_record(std::vector<std::byte> record, completion done);

  // A cluster node's apply (replica/raft_lane.h): an index record committed in a group's log, applied to
  // the cold index on every node in log order; an undecodable record is an error and changes nothing.
  // (submit_index_record applies through it too.) The cold mover counts the streams it names again.
  result<tier::cold_apply_result> apply_index_entry(std::span<const std::byte> record);
  // A cluster node applied committed command `c` with outcome `o`: the cold index follows it (a stream
  // created again has no cold bytes) and the cold tier counts and reads its bytes.
  void follow_applied(const streams::command& c, const streams::outcome& o);

  // Start-up, before the loop runs (a node with a cold tier): moves durable stream data to objects
  // through `put` (replica/cold_mover.h), and refuses appends (write_failure: cold_backlogged) while more
  // than `local_bytes` of stream data is in no object yet (0: never: local_budget_full). start_cold()
  // starts it on the loop.
  void attach_cold(const cold_mover_options& o, tier::uploader::put_fn put, std::uint64_t local_bytes);
  void start_cold();
  cold_mover* mover() { return mover_.get(); }
  const cold_mover* mover() const { return mover_.get(); }
  // Start-up, with attach_cold: uploads restore snapshots of this partition (replica/cold_snapshots.h);
  // start_cold() starts them. While one is being built, no record is forgotten (forget_cold).
  void attach_cold_snapshots(const cold_snapshot_options& o, cold_snapshot_io io);
  cold_snapshots* snapshots() { return snapshots_.get(); }
  const cold_snapshots* snapshots() const { return snapshots_.get(); }
  // A cluster lane's restore snapshots (replica/cluster_cold_snapshots.h), made by the node for its raft
  // lane; start_cold() starts them, stop() stops them.
  void attach_cluster_snapshots(std::unique_ptr<cluster_cold_snapshots> s);
  const cluster_cold_snapshots* cluster_snapshots() const { return cluster_snapshots_.get(); }
  // Reads of bytes held only in objects (read_plan::in_objects): `fetch(key, object_size, data_position,
  // length, done)` reads them off the loop and runs `done` on this partition's loop. Set at start-up
  // with attach_cold; without it such a read fails (the plan is cut, the error says why).
  using object_done = std::function<void(tier::store_result<tier::object_bytes>)>;
  using object_fetch_fn = std::function<void(std::string key, std::uint64_t object_size,
                                             std::uint64_t data_position, std::uint64_t length, object_done)>;
  void attach_object_reads(object_fetch_fn fetch) { fetch_object_ = std::move(fetch); }
  // Where bytes from `from` of `stream`, one of this partition's streams, sit in the bucket: the extent
  // holding them, its object, and (for a JSON stream's reads, docs/cold-tier.md "JSON streams") the end
  // of the bytes a read may take whole. Nothing when the index holds no such bytes. On this loop.
  struct object_location {
    tier::cold_object_ref object;
    tier::cold_extent extent;
    streams::stream_offset whole_end;
  };
  std::optional<object_location> locate_objects(const std::string& stream, streams::stream_offset from) const;
  // Reads of a fork's inherited bytes in objects whose source is another partition's (its index has
  // them): `locate(stream, from, done)` asks the partition that owns `stream` (locate_objects, on its
  // loop) and runs `done` on this partition's loop. Set at start-up with attach_object_reads; without
  // it such a read fails as bytes no index holds.
  using located_fn = std::function<void(std::optional<object_location>)>;
  using locate_fn = std::function<void(std::string stream, streams::stream_offset from, located_fn done)>;
  void attach_foreign_objects(locate_fn locate) { locate_foreign_ = std::move(locate); }
  // Look-ups in objects' record tables: `lookup(key, object_size, stream, at, done)` finds the record of
  // `stream` that begins at `at` in that object (tier::cold_fetcher::record_at) off the loop and runs
  // `done` on this partition's loop. Set at start-up with attach_object_reads.
  using record_done = std::function<void(tier::store_result<std::optional<tier::object_record>>)>;
  using record_lookup_fn = std::function<void(std::string key, std::uint64_t object_size, std::string stream,
                                              streams::stream_offset at, record_done)>;
  void attach_record_lookups(record_lookup_fn lookup) { lookup_record_ = std::move(lookup); }

  // Before a retain of one of this partition's streams at a point (docs/cold-tier.md, "Forks"): what the
  // retain must carry for every replica to decide alike whether a record begins there, when it needs to
  // know (a sub-offset, or a JSON stream's point). When the stream whose own bytes hold the point applies
  // its commands in another log (another raft group, lane or core: commit_path::same_log), the retain's
  // record decides (fork_retain_command::record_decides). When the point lies in bytes in objects of
  // this partition's index (and is not an extent's start of a JSON stream), the retain carries the record
  // too. Either way it is read from this node's records while it keeps them, else from the record table
  // of the object holding the bytes. `done` runs on this loop (before this returns when no look-up is
  // needed) with the retain to propose (no record when none begins there: the retain then refuses the
  // point), or an error (the bucket could not be read).
  using retain_done = std::function<void(result<streams::fork_retain_command>)>;
  void prepare_retain(streams::fork_retain_command c, retain_done done);
  // Bytes [from, from + length) of `stream`, held only in objects (this partition's index, or for another
  // partition's stream the owner's, as read_cold asks it): a fork's prefix cut from such a record
  // (outcome::sub_record_in_objects). `done` runs on this loop.
  using bytes_done = std::function<void(result<std::string>)>;
  void read_bucket_bytes(std::string stream, streams::stream_offset from, std::uint64_t length,
                         bytes_done done);
  // Forgets the records of `path` before `pos` (their bytes are in objects: pos <= the index's cold end
  // of the stream), so that the segments holding them may be reclaimed by the next checkpoint. Returns
  // the bytes forgotten.
  std::uint64_t forget_cold(const std::string& path, streams::stream_offset pos);
  // Takes a checkpoint at the next chance, whatever the log grew since the last (segments whose records
  // were forgotten are then deleted); a cluster node's data log reclaims at its next tick instead.
  void request_checkpoint();
  // The streams whose records in objects a reclaim or a restore snapshot may forget, each with its cold
  // end: streams that are visible (not soft-deleted or expired). A JSON stream's reads from objects end at
  // a message boundary (read_objects), so its records may go too; so may a fork source's: a fork's read
  // through it stops at its held records and reads the bytes before them from the bucket, placed by this
  // partition's index (locate_objects, asked from the fork's partition when it is another), and a fork
  // point in them is decided by the index and the objects' record tables, or, from a fork in another
  // log, by the record its retain carries (prepare_retain, fork_retain_command::record_decides).
  std::vector<std::pair<std::string, streams::stream_offset>> forgettable_cold() const;
  // A cut of this partition's state for the cold tier's restore snapshots (checkpointer::
  // snapshot_for_bucket); an error without a log.
  void snapshot_for_bucket(std::function<void(result<checkpointer::bucket_cut>)> fn);

  // Writes that add stream bytes are refused (cold_backlogged) while the data not yet in the bucket
  // fills the budget; deletes and reads go on.
  bool local_budget_full() const;
  // The cold mover counts every stream's local and held bytes again: the state was replaced (a rebuild
  // from the log, a group's snapshot restored).
  void recount_cold();

  // Why a write must be refused now: the log failed earlier (writes are refused until the state is
  // rebuilt from it), or nullopt.
  std::optional<errc> write_failure() const;
  // Commands of the local commit path queued behind the log, and their bytes.
  std::size_t in_flight() const { return wal_->in_flight(); }
  std::size_t in_flight_bytes() const { return wal_->in_flight_bytes(); }
  // A checkpoint waits for the commands in flight: hold new writes back until on_writes_resumed.
  bool holding_writes() const { return checkpointer_ && checkpointer_->pausing(); }
  // Runs `fn` on this core once a checkpoint has been written and none is under way (at once when that
  // is so already; never on a cluster node, which has no checkpointer: its groups snapshot instead).
  void when_checkpointed(std::function<void()> fn) {
    if (checkpointer_) checkpointer_->when_written(std::move(fn));
  }

  // Reads as live readers and clients may see them: only what is durable (shard_wal::clamp). Cold data
  // is read back from disk on this thread; when that fails the plan is cut before the failing slice, the
  // error is logged and stored in `*io` (when given). Client reads use read_planned and read_cold
  // instead, so that a disk read never blocks the loop.
  streams::read_result read_visible(const std::string& path, std::optional<streams::stream_offset> from,
                                    std::size_t max_bytes, status* io = nullptr) const;
  // read_visible without reading anything from disk: the plan may hold cold slices
  // (hot_tier::has_cold); then hand the result to read_cold. A plan without them is complete as is.
  streams::read_result read_planned(const std::string& path, std::optional<streams::stream_offset> from,
                                    std::size_t max_bytes) const;
  streams::read_result head_visible(const std::string& path) const;
  // Runs on this loop once a plan's cold slices were read (the plan is cut before a failing slice; the
  // error was logged and is in `io`). rr.code is not_found when the stream was deleted (or deleted and
  // created again) while the read was in flight: its old bytes are never served.
  using read_done = std::function<void(streams::read_result& rr, status io)>;
  // Reads the cold slices of `rr` (read_planned of `path`) on the node's cold_reader threads; `done`
  // runs later on this loop, never before read_cold returns. At most max_cold_reads are in flight, the
  // others wait here in order. `may_refuse` (a new request): returns false, and `done` never runs, when
  // max_cold_waiting reads wait already. Live readers already admitted pass false: each has at most one
  // read outstanding, bounded by its connection.
  bool read_cold(std::string path, streams::read_result rr, read_done done, bool may_refuse);
  // read_cold of a bare plan, without the stream's checks (a fork's source record); `done` runs later on
  // this loop.
  void read_slices(streams::read_plan plan, tier::cold_reader::completion done);
  // Reads the bytes of one record slice, from memory or from disk (fork sub-offset prefixes).
  result<std::string> bytes_of(const streams::chunk_slice& s) const { return hot_->bytes_of(s); }

  // Start-up, before the loop runs: the node's cold read threads, which post their completions to `home`
  // (the loop this partition's executor runs on). Without: cold slices are read on the executor, after
  // read_cold returned.
  void attach_cold_reader(tier::cold_reader* r, io::event_loop& home) {
    cold_ = r;
    cold_home_ = &home;
  }
  // Replaces max_cold_reads and max_cold_waiting (tests: a small bound to reach).
  void set_cold_limits(std::size_t in_flight, std::size_t waiting) {
    opts_.max_cold_reads = in_flight;
    opts_.max_cold_waiting = waiting;
  }
  // Cold reads done, and those in flight or waiting (this loop only; metrics and tests).
  std::uint64_t cold_reads_done() const { return cold_done_; }
  std::size_t cold_reads_pending() const {
    return cold_in_flight_ + cold_waiting_.size() + objects_in_flight_;
  }
  // Reads of bytes held only in the bucket (read_objects), done and failed (this loop only).
  std::uint64_t bucket_reads() const { return bucket_reads_; }
  std::uint64_t bucket_read_failures() const { return bucket_read_failures_; }
  // The latency of cold reads, microseconds from read_cold to `done` (written on this loop).
  const metrics::histogram& cold_read_latency() const { return cold_latency_; }

  tier::hot_tier& hot() { return *hot_; }
  shard_wal& wal() { return *wal_; }

  // A cluster node's data log (data_log.h), opened at start-up before the loop runs (and before raft
  // applies anything) in `dir`, read back through readers[core] (every lane's data log, indexed by lane
  // = shard index; owned by the caller, outliving the partition). Stream bytes applied from then on are
  // written there (write_applied) and may leave memory (hot tier) once it is synced.
  // `worker`: where its writer's disk work runs (storage::disk_worker; null: the writer's own threads).
  status open_data_log(storage::env& e, const std::string& dir, std::uint64_t segment_bytes,
                       std::vector<storage::segment_reader*> readers, storage::disk_worker* worker = nullptr);
  tier::data_log* data() { return data_log_.get(); }
  // A committed command applied with outcome `o`: the record it added is at `stored` (its bytes in the
  // node log, synced: it may leave memory at once) or, without one, goes to the data log (no-op without).
  void write_applied(const streams::command& c, const streams::outcome& o,
                     const streams::disk_location* stored = nullptr);
  // The core number of places in this partition's raft node log (raft_lane::node_log_core), once a raft
  // lane commits for it.
  void set_node_log_core(std::uint32_t core) { node_log_core_ = core; }
  std::optional<std::uint32_t> node_log_core() const { return node_log_core_; }
  // Records applied that point into the node log (write_applied with a place), and their bytes.
  std::uint64_t node_log_records() const { return node_log_records_; }
  std::uint64_t node_log_record_bytes() const { return node_log_record_bytes_; }
  // Whether a record's place `at` is on disk for good: in the node log (a node applies only what it
  // synced), or in the data log and synced. A snapshot may reference it rather than inline its bytes.
  bool data_durable(const streams::disk_location& at) const {
    if (node_log_core_ && at.core == *node_log_core_) return at.known();
    return data_log_ && at.core == opts_.core && data_log_->durable(at);
  }
  // The data-log segments group `group`'s latest snapshot references (replaces its previous set): they
  // stay on disk (reclaim keeps them) until the group's next snapshot pins others.
  void pin_snapshot_segments(std::uint32_t group, std::vector<std::uint64_t> segments);
  // Writes every record of the streams `in_part` accepts that is held in memory without a place on disk
  // (a snapshot installed from a peer inlines them) to the data log, so that they may leave memory like
  // the others. Call after a snapshot was restored.
  void persist_unlocated(const streams::state_machine::path_predicate& in_part);

  // Publishes the state machine's size as stream_count(): after every command that changed it, and once
  // before the loops run for what recovery restored.
  void recount_streams() { stream_count_.store(sm_.size(), std::memory_order_relaxed); }
  // Streams the state machine holds (soft-deleted ones too); readable from any thread.
  std::size_t stream_count() const { return stream_count_.load(std::memory_order_relaxed); }

  // Periodic upkeep (the shard's sweeper): the data log's sync and reclaim.
  void tick(std::int64_t now_ms);
  void stop();

 private:
  // A durable command's new record: into the hot tier, with its place in the log.
  void admit(const durable_result& r);
  // The cold index follows an applied command, and the mover counts the bytes it added.
  void follow_cold(const streams::command& c, const streams::outcome& o);
  // After a failed log write: once nothing is in flight, rebuild the state from the log and accept
  // writes again (docs/storage.md, "Write failures").
  void schedule_rebuild(std::chrono::milliseconds delay);
  void rebuild();
  class local_commit;

  struct cold_job {
    streams::read_plan plan;
    tier::cold_reader::completion done;
    std::chrono::steady_clock::time_point began;
  };
  // Hands waiting cold reads to the cold_reader while fewer than max_cold_reads are in flight.
  void dispatch_cold();
  void finish_cold(cold_job& j, streams::read_plan plan, status io);
  // After an asynchronous read of `path`: when the stream is gone or created again meanwhile, `rr` gets
  // its code and no bytes; otherwise the stream's current metadata.
  std::optional<streams::stream_meta> drop_if_replaced(const std::string& path,
                                                       streams::read_result& rr) const;
  // A cold read (disk or bucket) is done: counted, its latency observed.
  void observe_cold_read(std::chrono::steady_clock::time_point began);
  // read_cold of a plan that starts in objects (read_plan::in_objects).
  void read_objects(std::string path, streams::read_result rr, read_done done);
  // read_objects once the bytes' place is known (from this partition's index or another's).
  void read_located(std::string path, streams::read_result rr, read_done done, object_location where);
  // `stream` is another partition's (a fork's source elsewhere), and that partition can be asked.
  bool foreign(const std::string& stream) const { return !sm_.log_of(stream) && locate_foreign_; }
  // Where bytes from `from` of `stream` are in the bucket: this partition's index for its own streams,
  // the owner's (locate_foreign_) for another partition's. `done` may run before this returns.
  void locate_bytes(const std::string& stream, streams::stream_offset from, located_fn done);
  // prepare_retain's look-up of the record beginning at the retain's point in the record table of the
  // object `where` names.
  void read_point_record(streams::fork_retain_command c, const object_location& where, std::string stream,
                         retain_done done);
  // read_bucket_bytes once the next bytes' place is known; `got` holds what was read before them.
  void read_bucket_located(std::string stream, streams::stream_offset from, std::uint64_t length,
                           std::string got, std::optional<object_location> where, bytes_done done);
  // One read of `length` bytes of extent `e` of `object` from stream offset `from`; a JSON stream's is
  // cut after its last whole message, or read again up to `whole_length` when none ends in it.
  void fetch_range(std::string path, streams::read_result rr, read_done done, streams::stream_offset from,
                   std::uint64_t length, std::uint64_t whole_length, tier::cold_object_ref object,
                   tier::cold_extent e, bool json);

  raft::executor* ex_;
  const clock_source* clock_;
  partition_options opts_;
  partition_host* host_;
  streams::state_machine sm_;
  tier::cold_index cold_index_;
  std::unique_ptr<shard_wal> wal_ = std::make_unique<shard_wal>(nullptr);
  std::unique_ptr<commit_path> local_;  // a local_commit over this partition
  commit_path* commit_ = nullptr;       // local_ or a raft lane
  std::unique_ptr<tier::hot_tier> hot_;
  std::unique_ptr<checkpointer> checkpointer_;
  std::unique_ptr<tier::data_log> data_log_;   // cluster mode: where applied stream bytes go
  std::unique_ptr<cold_mover> mover_;          // a single node's cold tier
  std::unique_ptr<cold_snapshots> snapshots_;  // its restore snapshots
  std::unique_ptr<cluster_cold_snapshots> cluster_snapshots_;
  object_fetch_fn fetch_object_;
  locate_fn locate_foreign_;
  record_lookup_fn lookup_record_;
  std::uint64_t bucket_reads_ = 0;
  std::size_t objects_in_flight_ = 0;
  std::uint64_t bucket_read_failures_ = 0;
  std::uint64_t local_bytes_budget_ = 0;
  storage::segment_reader* own_segments_ = nullptr;
  std::optional<std::uint32_t> node_log_core_;
  std::uint64_t node_log_records_ = 0;
  std::uint64_t node_log_record_bytes_ = 0;
  storage::env* env_ = nullptr;
  std::string log_dir_;
  raft::executor::timer_id rebuild_timer_ = 0;
  bool stopped_ = false;
  std::atomic<std::size_t> stream_count_{0};  // sm_.size() after the last command (stream_count())
  tier::cold_reader* cold_ = nullptr;
  io::event_loop* cold_home_ = nullptr;  // where cold_ posts its completions
  std::deque<cold_job> cold_waiting_;
  std::size_t cold_in_flight_ = 0;
  std::uint64_t cold_done_ = 0;
  metrics::histogram cold_latency_;
};

}  // namespace weir::replica
