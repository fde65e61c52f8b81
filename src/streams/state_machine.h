// state_machine: the streams owned by one core, and the rules of the Durable Streams protocol applied
// to them (PROTOCOL.md 4, 5, 8). Commands in, outcomes out; reads produce read plans (views of the
// data, no copies). No I/O, no clock (time comes inside each command), deterministic.
//
// Lives on one core (the owner of the streams whose path hashes to it); not thread-safe. Forks whose
// source lives on another core are created in two steps by the caller: fork_retain on the source's
// state machine, then create (with the resolution) on the fork's.
//
// Hot tier: once the caller knows where a record's bytes are in the write-ahead log (locate), it may drop
// them from memory (evict); reads then return cold slices that the caller fetches from disk. Checkpoints:
// snapshot() is the whole state as a blob, restore() rebuilds it (state_snapshot.cc; the blob's layout
// is in docs/log-format.md, "Checkpoint blob of a stream state machine").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/result.h"
#include "base/string_map.h"
#include "streams/command.h"
#include "streams/stream_log.h"
#include "streams/types.h"

namespace weir::streams {

struct part_reference;  // below

namespace wire {
class writer;
class reader;
}  // namespace wire

enum class errc : std::uint8_t {
  ok = 0,
  not_found,              // no such stream (or expired)
  gone,                   // soft-deleted (has forks)
  config_mismatch,        // PUT on an existing stream with another configuration
  source_not_found,       // fork source missing
  source_gone,            // fork source soft-deleted
  bad_fork_offset,        // beyond the source's tail, or not a message boundary
  bad_sub_offset,         // no record at the fork offset, or past its end
  content_type_mismatch,  // append (or fork) with another content type
  closed,                 // append to a closed stream
  seq_regression,         // Stream-Seq not greater than the last
  stale_epoch,            // Producer-Epoch below the current one
  epoch_needs_seq_zero,   // a new Producer-Epoch must start at seq 0
  seq_gap,                // Producer-Seq beyond last + 1
  invalid_json,
  empty_json_array,
  deleted_with_forks,  // PUT on a soft-deleted path: a deleted stream that forks still read from holds it
  path_held,           // PUT on the path of a stream deleted less than its hold ago (delete_command::hold_ms)
};

// A snapshot of a stream's metadata, for responses.
struct stream_meta {
  std::string path;
  std::uint64_t generation = 0;  // distinguishes a re-created stream at the same path (ETag)
  std::string content_type;
  bool json = false;
  expiry_config expiry;
  bool closed = false;
  stream_offset tail{};
};

struct outcome {
  errc code = errc::ok;
  bool mutated = false;     // the state changed (what a log must keep)
  bool created = false;     // create: a new stream (201) rather than a match (200)
  bool appended = false;    // the tail moved
  bool closed_now = false;  // this command closed the stream
  bool duplicate = false;   // producer duplicate: idempotent success (204)
  std::optional<stream_meta> meta;
  // Producer details (PROTOCOL.md 5.2.1).
  std::uint64_t producer_epoch = 0;  // echoed on success; the current epoch on stale_epoch
  std::uint64_t producer_seq = 0;    // highest accepted seq on success and duplicates
  std::uint64_t expected_seq = 0;    // seq_gap
  std::uint64_t received_seq = 0;    // seq_gap
  // Streams that ceased to exist (deleted, expired, cascaded); live readers must be told.
  std::vector<std::string> removed;
  // The fork_release_commands to carry out (sources maybe on other cores, or in other groups).
  std::vector<fork_release_command> release;
  // fork_tombstone: a fork with the origin exists at the path; nothing was recorded.
  bool fork_exists = false;
  // fork_retain: what the fork inherits (the source's log and the fork point); `sub_record` is the
  // record at the fork point when a sub-offset was asked for (the caller materializes the prefix from it).
  std::optional<fork_resolution> resolution;
  std::optional<record> sub_record;
  // Set with sub_record when the record's bytes are only in the bucket (its data is then empty): its
  // stream (the one whose own bytes they are) and [begin, end).
  std::optional<object_span> sub_record_in_objects;
};

struct read_result {
  errc code = errc::ok;
  std::optional<stream_meta> meta;
  read_plan plan;
};

class snapshot_cut;

class state_machine {
 public:
  // `make_log`: where new streams keep their data (in-memory by default).
  state_machine();
  ~state_machine();
  state_machine(const state_machine&) = delete;
  state_machine& operator=(const state_machine&) = delete;

  outcome apply(const command& c);

  outcome create(const create_command& c);
  outcome append(const append_command& c);
  outcome remove(const delete_command& c);
  outcome touch(const touch_command& c);
  outcome expire(const expire_command& c);
  outcome fork_retain(const fork_retain_command& c);
  outcome fork_release(const fork_release_command& c);
  outcome fork_tombstone(const fork_tombstone_command& c);

  // Reads (no state change; the caller applies a touch_command first to renew a TTL).
  // `from` absent: the stream's start. `max_bytes`: the server's chunk limit.
  read_result read(std::string_view path, std::optional<stream_offset> from, std::size_t max_bytes) const;
  // Metadata, treating expired streams as absent (expiry is applied lazily by the next command).
  read_result head(std::string_view path, std::int64_t now_ms) const;
  // What head() would say of the stream's existence, tail and closure, without copying its metadata.
  struct position {
    bool exists = false;
    stream_offset tail{};
    bool closed = false;
    // When it expires unless a command renews its TTL first (0: it has no expiry).
    std::int64_t expires_ms = 0;
  };
  position position_of(std::string_view path, std::int64_t now_ms) const;

  using path_predicate = std::function<bool(std::string_view path)>;

  // Live (not soft-deleted, not expired) streams whose path starts with `prefix`.
  std::vector<stream_meta> list(std::string_view prefix, std::int64_t now_ms) const;
  // Paths whose TTL or Expires-At passed by `now_ms` (for the sweeper).
  std::vector<std::string> expired(std::int64_t now_ms) const;

  std::size_t size() const { return streams_.size(); }
  // Idempotent producers whose state the streams keep. O(streams): for a metrics scrape, not a request.
  std::size_t producer_count() const {
    std::size_t n = 0;
    for (const auto& [path, s] : streams_) n += s.producers.size();
    return n;
  }
  // Exchanges the whole state with `other` (a core rebuilding its state from its log after a write
  // failure swaps the rebuilt machine in).
  void swap(state_machine& other) noexcept {
    streams_.swap(other.streams_);
    expiring_.swap(other.expiring_);
    std::swap(next_generation_, other.next_generation_);
    by_generation_.swap(other.by_generation_);
    held_until_.swap(other.held_until_);
    hold_ends_.swap(other.hold_ends_);
    std::swap(removals_, other.removals_);
    tombstones_.swap(other.tombstones_);
    std::swap(applying_, other.applying_);
  }
  // The generation the next created stream gets. A cluster sets it from the command's place in its raft
  // log before each apply, so that every node gives a stream the same generation (and ETag).
  void set_next_generation(std::uint64_t g) { next_generation_ = g; }
  // Cluster mode, before each apply: the place of the entry about to be applied, (group, index) of its
  // raft log. Sets the next generation from it ((group + 1) << 40 | index) and makes a fork_retain
  // record its reference under that place (fork_resolution::origin, which the retain's outcome then
  // carries), so that a release can name the reference it gives back. Never called on a single node:
  // retains there take anonymous references (a count).
  void set_entry_place(std::uint32_t group, std::uint64_t index) {
    next_generation_ = (std::uint64_t(group) + 1) << 40 | index;
    applying_ = fork_origin{group, index};
  }
  // Where a fork point inside bytes the cold tier moved to objects is decided. Each replica forgets those
  // records on its own schedule (and a replay finds them again), so an answer read from them could
  // differ between the nodes of a cluster, or between a first apply and a replay: fork_retain asks
  // `fn(stream, point)` first, for the stream whose own bytes hold the point, and an answer (from the
  // replicated cold index: whether an extent begins there, and where the stream's bytes in objects end)
  // decides; nullopt leaves it to the records. In those bytes a record begins at an extent's start, or
  // where the retain's record from an object's record table (fork_retain_command::point_record) says, if
  // that record ends inside them; a sub-offset needs that record. A retain whose record decides
  // (fork_retain_command::record_decides: the holder applies its commands in another log, whose index
  // and records this replica has applied to its own point) asks nothing: its record alone decides.
  struct cold_point {
    bool extent_start = false;
    stream_offset cold_end;
  };
  using cold_boundary_fn =
      std::function<std::optional<cold_point>(std::string_view stream, stream_offset point)>;
  void set_cold_boundary(cold_boundary_fn fn) { cold_boundary_ = std::move(fn); }
  // Paths of deleted streams that cannot be re-created yet, with the time their hold ends.
  std::size_t held_paths() const { return held_until_.size(); }

  // Log replay support (server/wal_recovery.cc). A fork reads its records before the fork point from
  // its source's log (pointer-based stitching, PROTOCOL.md 4.2). A fork replayed from the log or restored
  // from a checkpoint has no such link (the log does not encode it); once every core has replayed, the
  // caller links each fork to its source's log (stitch_fork), which may live on another core.
  struct fork_link {
    std::string path;
    std::string source;
    stream_offset point{};
  };
  // Every fork (soft-deleted ones too), linked or not: what counts fork references.
  std::vector<fork_link> forks() const;
  // Cluster mode: the source and origin of the fork at `path` (soft-deleted ones too), or nothing when
  // there is no such stream, it is not a fork, or its create carried no origin: what a read of the fork
  // waits for on a node (the source's group applied through the origin's index; docs/replication.md).
  struct fork_wait {
    std::string source;
    fork_origin origin;
  };
  std::optional<fork_wait> fork_wait_of(std::string_view path) const;
  // Forks whose fork point is > 0 and that are not linked to their source's log yet (see stitch_fork).
  std::vector<fork_link> forks_to_stitch() const;
  // The log of `path` (soft-deleted streams included), or null: what a fork of it links to.
  std::shared_ptr<const memory_log> log_of(const std::string& path) const;
  // Links the fork at `path` to its source's log. Only while the log is not shared with other cores'
  // readers (start-up, or a state being rebuilt).
  void stitch_fork(const std::string& path, std::shared_ptr<const memory_log> source);
  // Whether `path` is a fork of `source` with a fork point > 0 and no link to its source's log yet.
  bool awaits_link(std::string_view path, std::string_view source) const;
  // After a log write failure, this machine was rebuilt from the log and `old` is the state it replaces:
  // every stream of this machine that is the same incarnation in `old` (same path and generation) takes
  // over `old`'s log object with this machine's records, so forks that point at it (on other cores too)
  // keep reading it and its fork link stays. Forks new to this machine keep theirs unlinked.
  void adopt_logs(state_machine& old);
  // How many records `path`'s own log holds (0 if absent): a fork's inherited records are not counted.
  std::size_t records_held(std::string_view path) const;
  // Streams holding fork references, with their counts (anonymous and by origin; the caller compares
  // them with the forks that exist and releases references a crash left behind).
  std::vector<std::pair<std::string, std::uint32_t>> ref_counts() const;
  // Cluster mode: a reference held by origin whose fork is known (retains of kind 10), for the fork sweep.
  struct held_reference {
    std::string source;
    fork_origin origin;
    std::string fork;
    std::int64_t since_ms = 0;  // the retain's command time
  };
  // The references by origin of the sources `in_sources` accepts, taken at or before `taken_by_ms`, whose
  // fork is known; by source path, then origin.
  std::vector<held_reference> references_by_origin(const path_predicate& in_sources,
                                                   std::int64_t taken_by_ms) const;
  // Whether `source` (soft-deleted or not) holds the reference of `origin`.
  bool holds_reference(std::string_view source, const fork_origin& origin) const;
  // Whether a fork with `origin` exists at `path` (soft-deleted ones too: they hold their reference).
  bool fork_exists(std::string_view path, const fork_origin& origin) const;
  // Origins recorded dead by fork_tombstone and not forgotten yet (all parts).
  std::size_t tombstones() const { return tombstones_.size(); }

  // Hot tier (the server calls these on the owner core once a command is durable).
  //
  // The record of the stream incarnation `generation` (unique per state machine: a re-created stream
  // has a new one) that ends at stream position `end` is on disk at `at`. False if there is no such
  // record (the stream was deleted meanwhile).
  bool locate(std::uint64_t generation, std::uint64_t end, const disk_location& at);
  // Drops that record's bytes from memory if its location is known; returns the bytes released (0 if
  // absent, not located, or already cold). Other holders of the chunk (readers in flight) keep it alive.
  std::size_t evict(std::uint64_t generation, std::uint64_t end);
  // Whether the stream incarnation `generation` still exists (soft-deleted ones too: they keep their
  // records). What a holder of per-record state (the hot tier) asks to forget a removed stream's.
  bool holds_generation(std::uint64_t generation) const { return by_generation_.contains(generation); }
  // Streams erased so far (deleted, expired, cascaded; not soft-deletions): when it moves, some
  // generation stopped existing.
  std::uint64_t removals() const { return removals_; }
  // The segment ids of core `core`'s log that some record of this state machine points at (cold or
  // hot), ascending. What the log's reclaim must keep. A fork's inherited records are its source's:
  // the source (kept, soft-deleted if need be, while forks reference it) lists their segments.
  // With `in_part`: only the records of the streams it accepts (a cluster group's part).
  std::vector<std::uint64_t> referenced_segments(std::uint32_t core,
                                                 const path_predicate& in_part = {}) const;
  // Calls `fn` with every own record that is in memory with no known location (a fork's inherited
  // records are its source's), with its stream's path and generation: records restored with their bytes
  // inlined, which a cluster node writes to its data log so that they may leave memory. `fn` must not
  // change this machine.
  void for_each_unlocated(
      const std::function<void(std::string_view path, std::uint64_t generation, const record& r)>& fn) const;

  // Checkpoints (state_snapshot.cc).
  //
  // Every stream (soft-deleted ones too) with all its state (meta incl. generation, requested expiry,
  // last access, soft_deleted, ref_count, fork origin, closed_by, last_seq, producers, own records: a
  // fork's inherited records are its source's) and next_generation_. Records are written as their
  // disk_location + begin/size/end/messages; a record whose location is not known has its bytes inlined (so
  // the blob is always complete). Deterministic: the same state gives the same bytes.
  std::vector<std::byte> snapshot() const;
  // snapshot() in two steps, so that a checkpoint holds its core's writes back only for the first: cut()
  // runs on the owner core in O(streams) (see snapshot_cut below), and snapshot_cut::encode writes the
  // same blob later, on any thread.
  snapshot_cut cut() const;
  // Rebuilds the state from a snapshot; the state machine must be empty (fresh). Restored records are
  // cold (buf null) unless their bytes were inlined. Restored forks are unlinked (forks_to_stitch); a
  // version 1 blob's inherited records are dropped (the source has them). Returns an error
  // (codec_errc::bad_value or truncated, with a reason) for a damaged or unknown-version blob, leaving the
  // machine empty; never crashes on garbage.
  status restore(std::span<const std::byte> blob);

  // Per-part checkpoints (state_snapshot.cc, state_restore_part.cc; a cluster's raft group snapshot:
  // the part is the streams whose path hashes to one group). Blob layout: docs/log-format.md,
  // "Checkpoint blob of a stream state machine", version 4.
  using location_predicate = std::function<bool(const disk_location& at)>;
  // The streams (soft-deleted ones too) and held deleted paths whose path satisfies `in_part`, each
  // stream as snapshot() writes it. No next generation: in a cluster it comes from the raft index of each
  // command (set_next_generation), and restore_part leaves it alone. A record is written as a reference
  // (kind 0) only if its location is known and `referencable(at)` (the data log holds it durably);
  // otherwise its bytes are inlined. A cold record (bytes dropped) that is not referencable cannot be
  // written: codec_errc::bad_value naming it, and the caller does not snapshot now. Deterministic.
  result<std::vector<std::byte>> snapshot_part(const path_predicate& in_part,
                                               const location_predicate& referencable) const;
  // Replaces the part (streams and held paths satisfying `in_part`) by the blob's content; the rest of
  // the machine is untouched, next_generation_ too. The whole blob is decoded and checked first: on a
  // damaged blob (codec_errc::truncated or bad_value; also a blob stream outside the part, or one whose
  // generation belongs to a stream outside the part) nothing changes. Restored records are cold (location
  // only) or hot (inlined bytes, no location: the caller writes them to its own data log and locates).
  //
  // A stream of the part that is the same incarnation before and after (same path and generation)
  // keeps its log object with the blob's records (memory_log::take_records), so every fork linked to
  // it, in any part, keeps reading through it. Then every unlinked fork, of the part or whose source is
  // in the part, is linked to its source's log if the source exists (in any part; never into a cycle).
  // A fork linked to an incarnation that the restore replaced by another (or removed) keeps that link:
  // its inherited records are immutable, and the new incarnation is not what it forked (the blob does
  // not name the source generation; a fork of a new incarnation whose source part is behind gets the
  // same treatment as apply-time stitching: whatever stream is at the path). Linking happens here, on
  // the owner core: valid only while no other core reads these logs (cluster mode: every stream of the
  // node is on core 0, as in replica::raft_lane's apply_committed).
  //
  // Fork references (the source's anonymous count and its references by origin): a cluster makes both the
  // retain and the release entries of the source's group (replica::lane_host::on_applied proposes the
  // releases), so a source's references are part of its group's state and the blob's are taken as is (a
  // version 4 or 5 blob's count becomes anonymous references); tombstones of forks in the part
  // (fork_tombstone) are the blob's too. A fork that vanishes with the restore releases nothing (its release
  // is an entry of its source's group). A source may thus be erased while a fork whose delete this node has
  // not applied yet still links to its log: that fork is never read again here (its own group's read index
  // covers the delete), and the log object lives on with the link. `removed` (optional) gets the paths whose
  // stream ceased to exist or became another incarnation (live readers must be told), cascades included;
  // removals() moves when a generation stops existing, so the hot tier forgets it.
  status restore_part(std::span<const std::byte> blob, const path_predicate& in_part,
                      std::vector<std::string>* removed = nullptr);

 private:
  struct producer_state {
    std::uint64_t epoch = 0;
    std::uint64_t last_seq = 0;
    std::int64_t last_used_ms = 0;  // the command time of its last accepted append
  };
  struct stream_state {
    stream_meta meta;
    expiry_config requested_expiry;  // as asked at creation (idempotent PUT compares this)
    std::int64_t last_access_ms = 0;
    bool soft_deleted = false;
    // Forks that reference this stream: a count of anonymous references (a single node's; a cluster's
    // taken before references had origins), and a cluster's references by their retain's index in this
    // stream's group (fork_origin::index) with the group, the fork's path (empty: not known) and the
    // retain's time.
    std::uint32_t ref_count = 0;
    struct origin_reference {
      std::uint32_t group = 0;
      std::string fork;
      std::int64_t since_ms = 0;
      bool operator==(const origin_reference&) const = default;
    };
    std::map<std::uint64_t, origin_reference> origins;
    std::size_t references() const { return ref_count + origins.size(); }
    std::optional<fork_spec> fork;  // origin (resolution.source_log cleared)
    std::optional<producer_ref> closed_by;
    std::optional<std::string> last_seq;
    std::map<std::string, producer_state> producers;
    // A soft-deleted stream keeps its log (records and their locations) until its last fork is released:
    // forks read their inherited records from it, and referenced_segments() keeps covering its segments.
    // Shared with the forks that read from it (on any core; see stream_log.h).
    std::shared_ptr<memory_log> log;
  };

  // When `s` expires as it stands (its Expires-At, or its last access plus its TTL, whichever is first).
  static std::optional<std::int64_t> expiry_of(const stream_state& s);
  static bool is_expired(const stream_state& s, std::int64_t now_ms);
  // Neither soft-deleted nor expired: what head(), list() and position_of() show.
  static bool is_visible(const stream_state& s, std::int64_t now_ms) {
    return !s.soft_deleted && !is_expired(s, now_ms);
  }
  // The stream at `path` after applying lazy expiry: nullptr if absent or expired-and-removed.
  stream_state* resolve(const std::string& path, std::int64_t now_ms, outcome& out);
  // A stream that exists and is not soft-deleted; otherwise nullptr with out.code = missing or gone.
  stream_state* resolve_live(const std::string& path, std::int64_t now_ms, outcome& out,
                             errc missing = errc::not_found, errc gone = errc::gone);
  void erase(const std::string& path, outcome& out);
  stream_meta meta_of(const stream_state& s) const;
  // The stream of generation `generation` (soft-deleted or not), else nullptr.
  stream_state* find_generation(std::uint64_t generation);
  // Drops the holds that ended by `now_ms`.
  void release_holds(std::int64_t now_ms);

  // One stream's entry in a blob (state_snapshot.cc). `referencable` null: every located record is
  // written as a reference (snapshot()); otherwise see snapshot_part. Fails only on a cold record that
  // cannot be referenced. `part`: as a part blob (version 6) writes it: with each fork's origin and the
  // references by origin; otherwise the references are one count (version 3).
  // `held`: version 7, with where each stream's own records begin (memory_log::held_from).
  static status write_stream(wire::writer& w, const std::string& path, const stream_state& s,
                             const location_predicate* referencable, bool part = false, bool held = false);
  // What write_stream writes before the records' own part (held_from, count, records).
  static void write_stream_head(wire::writer& w, const std::string& path, const stream_state& s, bool part);
  // Reads one stream entry of a blob of `version`, checking its log (contiguous from the fork point).
  static status read_stream(wire::reader& in, std::uint64_t version, std::string& path, stream_state& s);
  // A decoded per-part blob (state_snapshot.cc).
  // A dead origin (fork_tombstone): the fork's path and group, and when it was recorded.
  struct tombstone {
    std::string fork;
    std::uint32_t group = 0;
    std::int64_t at_ms = 0;
    bool operator==(const tombstone&) const = default;
  };
  using origin_key = std::pair<std::uint32_t, std::uint64_t>;  // fork_origin's group and index
  using tombstone_map = std::map<origin_key, tombstone>;
  struct part_content {
    string_map<stream_state> streams;
    std::map<std::string, std::int64_t, std::less<>> held;
    tombstone_map tombstones;
  };
  // Decodes and checks a version-4 blob; every path must satisfy `in_part` when given.
  static result<part_content> decode_part(std::span<const std::byte> blob, const path_predicate* in_part);
  // Encodes streams (sorted by path), held paths and tombstones as a part blob (version 6).
  static result<std::vector<std::byte>> encode_part(
      const std::vector<const std::pair<const std::string, stream_state>*>& streams,
      const std::map<std::string, std::int64_t, std::less<>>& held, const tombstone_map& tombstones,
      const location_predicate& referencable);
  // Links the fork at `fork` (a stream of this machine) to `source` unless that would close a cycle.
  static bool link_if_acyclic(stream_state& fork, const std::shared_ptr<memory_log>& source);
  // Decodes a part, hands every cold record (with its stream's path) to `rewrite`, and encodes the part
  // again with its records' locations as references (relocate_snapshot_part).
  static result<std::vector<std::byte>> rewrite_cold_records(
      std::span<const std::byte> blob,
      const std::function<std::optional<error>(const std::string&, record&)>& rewrite);
  friend result<std::vector<part_reference>> snapshot_part_references(std::span<const std::byte> blob);
  friend result<std::vector<std::byte>> inline_snapshot(
      std::span<const std::byte> blob,
      const std::function<std::optional<stream_offset>(const std::string& path)>& forget_before,
      const std::function<result<chunk>(const part_reference&)>& read);
  friend result<std::vector<std::byte>> relocate_snapshot_part(
      std::span<const std::byte> blob,
      const std::function<std::optional<part_reference>(const part_reference&)>& to);
  friend result<std::vector<std::byte>> inline_snapshot_part(
      std::span<const std::byte> blob,
      const std::function<std::optional<stream_offset>(const std::string& path)>& forget_before,
      const std::function<result<chunk>(const part_reference&)>& read);

  string_map<stream_state> streams_;
  std::unordered_set<std::string> expiring_;  // streams with a TTL or Expires-At (what the sweeper scans)
  std::uint64_t next_generation_ = 1;
  // Every entry of streams_ by its generation (the hot tier's key: no path to hash or copy per record).
  std::unordered_map<std::uint64_t, stream_state*> by_generation_;
  // Deleted paths on hold (delete_command::hold_ms): when each hold ends, and the same ordered by time.
  std::map<std::string, std::int64_t, std::less<>> held_until_;
  std::set<std::pair<std::int64_t, std::string>> hold_ends_;
  std::uint64_t removals_ = 0;  // see removals()
  // Dead origins (fork_tombstone), by origin; a part's are those whose fork path is in it.
  tombstone_map tombstones_;
  std::optional<fork_origin> applying_;  // set_entry_place
  cold_boundary_fn cold_boundary_;
};

// A cut of a state machine for its checkpoint (state_machine::cut; state_snapshot.cc). Taken on the owner
// core while no command is in flight: every stream's metadata is encoded then, and its log's own record
// count and front_cuts() noted (O(streams), no record touched; the streams are put in path order later,
// by encode). encode() writes the blob that snapshot() would have written at the cut, reading those
// records through memory_log::visit_records, from any thread, while the owner goes on applying commands
// (it only adds records after them, or changes their places and bytes, under the log's lock; either form
// of a record is the same record). The cut holds the logs, so a stream deleted meanwhile is still encoded
// as it was.
class snapshot_cut {
 public:
  // The blob, and into `segments` (ascending, unique) the segments of core `core`'s log that its
  // records point at: what the checkpoint must keep. Fails when records left a log's front since the
  // cut (the cold tier forgot them, or a rebuild replaced them): take another cut later.
  result<std::vector<std::byte>> encode(std::uint32_t core, std::vector<std::uint64_t>& segments) const;
  std::size_t streams() const { return streams_.size(); }

 private:
  friend class state_machine;
  struct stream_entry {
    std::size_t head = 0;  // write_stream_head's bytes: heads_[head, head_end)
    std::size_t head_end = 0;
    std::string_view path;  // in heads_ (set by encode's sort)
    std::shared_ptr<const memory_log> log;
    std::uint64_t held_from = 0;
    std::size_t count = 0;  // own records at the cut
    std::uint64_t front_cuts = 0;
  };
  std::string header_;  // magic, version, next generation, stream count
  std::string heads_;   // every stream's head, back to back, in the state machine's order
  std::vector<stream_entry> streams_;
  std::string trailer_;  // the held paths
  bool held_ = false;    // version 7: each stream's held_from is written
  std::size_t estimate_ = 0;
};

// How long a tombstone (fork_tombstone_command) is kept: a fork create carrying its origin that commits
// later than this after the tombstone is not refused any more. Creates are built right after their
// retain applied and proposed once; the sweep only tombstones origins whose retain is older than the
// proposals' longest wait, so by then the create's proposer gave up on it; what can still commit it is a
// node that holds it in its log and becomes leader of the fork's group again, which takes a partition
// lasting as long, and such a log's entries are replaced by the first entry a newer leader commits.
// A day is far beyond both (docs/replication.md, "Forks"). A constant, not a setting: every node and
// every replay must forget a tombstone at the same entry.
inline constexpr std::int64_t fork_tombstone_horizon_ms = 24ll * 3600 * 1000;

// A record a per-part blob references (kind 0): its place in a data log and the slice of it.
struct part_reference {
  disk_location at;
  std::uint32_t begin = 0;
  std::uint32_t size = 0;
  friend bool operator==(const part_reference&, const part_reference&) = default;
};

// Every reference of a per-part blob, in the blob's order (a record referenced twice is listed twice).
// What a node copies to a peer ahead of the blob (docs/replication.md, "Snapshots"). A damaged blob: as
// restore_part.
result<std::vector<part_reference>> snapshot_part_references(std::span<const std::byte> blob);

// The blob with every reference replaced by `to(reference)`: the same record in another data log (a
// peer's copy). Records held inline stay inline; nothing else changes. A reference `to` does not know
// (nullopt), or one that changes the record's size, fails (codec_errc::bad_value, naming the stream).
// Deterministic.
result<std::vector<std::byte>> relocate_snapshot_part(
    std::span<const std::byte> blob,
    const std::function<std::optional<part_reference>(const part_reference&)>& to);

// A whole-machine blob (state_machine::snapshot) rewritten so that it needs no local disk, for a restore
// from the cold tier (docs/cold-tier.md, "Restore"): each stream's own records ending at or before
// `forget_before(path)` are forgotten (as memory_log::forget_before: their bytes are in objects), and
// every other record on disk has its bytes inlined, read with `read` (which must give exactly the
// reference's size). Everything else is as the blob has it. Errors: a damaged blob (as restore), or the
// first failed or short read (named). Blocking only as much as `read` is; touches no live state.
result<std::vector<std::byte>> inline_snapshot(
    std::span<const std::byte> blob,
    const std::function<std::optional<stream_offset>(const std::string& path)>& forget_before,
    const std::function<result<chunk>(const part_reference&)>& read);

// inline_snapshot for a per-part blob (state_machine::snapshot_part: a cluster's raft group), for a
// restore of a cluster from the cold tier. Errors as inline_snapshot's, or a damaged part (as
// restore_part).
result<std::vector<std::byte>> inline_snapshot_part(
    std::span<const std::byte> blob,
    const std::function<std::optional<stream_offset>(const std::string& path)>& forget_before,
    const std::function<result<chunk>(const part_reference&)>& read);

// Producer state a stream keeps (PROTOCOL.md 5.2.1, "Producer State Cleanup": servers MAY expire it).
// A producer idle this long is forgotten and treated as new; and a stream keeps at most this many
// producers, forgetting the least recently used one for a new one. Constants, not settings: the state
// machine must decide the same on every replay and every replica.
inline constexpr std::int64_t producer_idle_ms = 7ll * 24 * 3600 * 1000;  // the spec's recommendation
inline constexpr std::size_t max_producers_per_stream = 10'000;

// The media type of a Content-Type value, lowercased, without parameters ("Text/Plain; x=y" -> "text/plain").
std::string normalize_content_type(std::string_view content_type);
// normalize_content_type(a) == normalize_content_type(b), without allocating (the append path).
bool same_media_type(std::string_view a, std::string_view b);

}  // namespace weir::streams
