// cold_mover: moves a partition's stream data to the cold tier (docs/cold-tier.md). The unit of upload
// is a group: on a single node the shard is its one group and its write-ahead log is the group's log; on
// a cluster node the partition (a lane) runs several raft groups, and only the leader of a group uploads
// that group's streams, under its raft term (cold_groups: raft_lane implements it). For each group it
// leads, the mover reads each stream's durable bytes that are not in an object yet (from memory, or from
// the log's segments on the node's cold-read threads), hands them to that group's tier::uploader, and
// once an object is in the bucket records its index through the group's log (a single node:
// partition::submit_index_record; a cluster: a raft entry every replica applies), so that the index is
// replayed, checkpointed and snapshotted with the streams. Nothing local is deleted here: a stream's
// bytes below its cold end are what a reclaim may drop, and the reclaim runs on every node (followers
// included: the index is replicated, each node frees its own disk).
//
// What it keeps in memory is only where it stands: per stream, how far its bytes were handed to the
// uploader (fed), which may run ahead of the index's cold end while objects are in flight; a refused
// range, a record that did not commit or a lost leadership sets the stream back to its cold end; and
// what the stream adds to the partition's local and held bytes, kept up to date as the stream changes
// (the partition tells the mover of every command applied, index record applied and record forgotten)
// so that no pass walks every stream; a pass counts again only the streams whose expiry time came (a
// stream expires with no command). Each uploader holds at most max_waiting_bytes of bytes sent and not
// yet reported: feeding waits beyond it (while the bucket is down), and the partition's local bytes (not
// in objects) grow until the node's budget refuses appends.
//
// Each group the node leads owns a cold_sweeper (when given list and remove functions), which deletes
// the objects nothing names any more (deleted and expired streams, orphans) under the group's term and
// the uploader's settled sequence.
//
// A key is never written twice with different bytes: a single node uploads each run under a term of its
// own (next_cold_term: a counter in the log's directory, bumped at every start before anything is
// uploaded); a cluster group's leader under its raft term, which no other node leads in and which this
// node never leads again after a restart.
//
// Lives on the partition's executor: every method runs there, and so do the uploaders' reports.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/result.h"
#include "raft/executor.h"
#include "replica/cold_sweeper.h"
#include "replica/partition.h"
#include "storage/env.h"
#include "tier/uploader.h"

namespace weir::replica {

// The term of this run's uploads from `dir` (a shard's log directory): one more than the last run's,
// written and synced to <dir>/cold-term before it is returned. 1 on a fresh directory.
result<std::uint64_t> next_cold_term(storage::env& e, const std::string& dir);

// The groups a mover uploads for, and how their index records travel (a cluster node's raft lane; a
// single node's is the mover's own: one group, always led, records through the partition's log). Called
// on the partition's executor.
class cold_groups {
 public:
  virtual ~cold_groups() = default;
  // This partition's groups, and the one a stream belongs to.
  virtual std::vector<std::uint32_t> groups() const = 0;
  virtual std::uint32_t group_of(std::string_view path) const = 0;
  // The term this node leads `group` in (its uploads are named by it); nullopt: it does not lead it.
  virtual std::optional<std::uint64_t> leader_term(std::uint32_t group) const = 0;
  // Records an index record (tier::encode_index_record) through `group`'s log; `done` runs once this
  // node applied it (what applying did) or with an error when it was not (not applied here: an
  // undecodable record, a leadership lost, a log that failed). May run inside the call.
  using recorded = std::function<void(result<tier::cold_apply_result>)>;
  virtual void record(std::uint32_t group, std::vector<std::byte> record, recorded done) = 0;
  // `ready(true)` once this node, leading `group`, applied every entry committed before the call (a raft
  // read index; at once on a single node): no index record of an earlier term can be applied after it.
  // `ready(false)`: it could not confirm it. The sweep of orphans waits for it once per term.
  virtual void settle(std::uint32_t group, std::function<void(bool)> ready) = 0;
};

struct cold_mover_options {
  // Epoch and object sizes; a single node's group (the shard) and term (next_cold_term). A cluster
  // node's groups and terms come from `groups`.
  tier::uploader_options upload;
  // Null: a single node (the shard is the group). Outlives the mover.
  cold_groups* groups = nullptr;
  // Bytes handed to a group's uploader and not yet reported: feeding that group waits beyond it.
  std::uint64_t max_waiting_bytes = 32ull << 20;
  // How often the mover looks at leadership, the budget and the streams written since the last pass,
  // and the bytes one read of a stream gives (a stream with more is read again in the same turn).
  std::chrono::milliseconds scan_interval{200};
  std::size_t scan_bytes = 1u << 20;
  // Once this many bytes were appended since the streams were last read, they are read at once (when
  // durable) rather than at the next pass: a fast writer's bytes are taken from memory before the hot
  // tier lets them go, and one stream is not held to scan_bytes per pass.
  std::uint64_t feed_after_bytes = 1u << 20;
  // The most bytes one turn of reading hands to the uploaders before it lets the loop serve other work
  // (it goes on at a later turn of the loop).
  std::uint64_t turn_bytes = 4u << 20;
  // With a clock (microseconds, monotonic): a turn also ends once it ran turn_time, however few bytes
  // it handed over (many streams of small records cost more per byte). Without one (the simulation,
  // whose runs must not depend on the machine's speed) only turn_bytes ends a turn.
  std::function<std::int64_t()> clock_us;
  std::chrono::microseconds turn_time{1000};
  // Stream bytes this shard keeps on its disk (its share of --local-bytes); beyond it, records whose
  // bytes are in objects are forgotten and a checkpoint deletes their segments. 0: nothing is dropped.
  std::uint64_t keep_bytes = 0;
  // The least time between two checkpoints a reclaim asks for (each encodes every stream's state; a
  // reclaim at every pass of a busy node would ask for one every scan_interval). A reclaim within it
  // leaves its checkpoint owed to a later pass.
  std::chrono::milliseconds checkpoint_interval{1000};
  // Deleting objects nothing names any more (replica/cold_sweeper.h); without its list and remove
  // functions nothing is deleted.
  cold_sweeper_options sweep;
};

struct cold_mover_stats {
  std::uint64_t objects = 0;                // objects uploaded and recorded in the index
  std::uint64_t bytes = 0;                  // their stream bytes
  std::uint64_t ranges_refused = 0;         // ranges the index refused (set back and sent again)
  std::uint64_t read_failures = 0;          // reads of local data for an upload that failed (tried again)
  std::uint64_t local_bytes = 0;            // stream bytes not in an object (visible streams)
  std::uint64_t held_bytes = 0;             // stream bytes this shard holds on disk or in memory
  std::uint64_t forgotten_bytes = 0;        // bytes left to objects alone (records forgotten)
  std::uint64_t reclaims = 0;               // passes that forgot records (each owes a checkpoint)
  std::uint64_t stepped_down_failures = 0;  // failed upload attempts of uploaders stopped since
};

class cold_mover {
 public:
  cold_mover(partition& p, cold_mover_options o, tier::uploader::put_fn put);
  ~cold_mover();
  cold_mover(const cold_mover&) = delete;
  cold_mover& operator=(const cold_mover&) = delete;

  // Counts and looks at every stream once (what an earlier run left), then at the streams written
  // since, every scan_interval.
  void start();
  // No more reads, uploads or records (objects in flight may land: orphans for the sweep).
  void stop();
  // A stream's durable bytes grew (or it was created): read it at the next pass, or at once when
  // feed_after_bytes were appended since the last read.
  void note_written(const std::string& path);

  // Stream bytes on this node that are in no object yet (visible streams; what is applied counts at
  // once, durable or not).
  std::uint64_t local_bytes() const { return stats_.local_bytes; }
  // The partition applied `c` (mutated the state, maybe not durable yet): the streams it touched are
  // counted again.
  void note_applied(const streams::command& c, const streams::outcome& o);
  // `path`'s cold end or its held records changed (an index record applied, records forgotten).
  void note_changed(const std::string& path) { count(path); }
  // Every stream counted again (the partition's state was replaced: a rebuild, a group's snapshot).
  void count_all();
  const cold_mover_stats& stats() const { return stats_; }
  // The uploads of the groups this node leads, summed.
  struct upload_view {
    std::uint64_t bytes_waiting = 0;
    std::size_t objects_in_flight = 0;
    std::uint64_t attempts_failed = 0;  // every uploader this run (a counter)
    std::string last_error;             // a group's last failure ("" when none failing)
    std::size_t groups_led = 0;
  };
  upload_view uploads() const;
  // The uploader of `group` while this node leads it (null otherwise).
  const tier::uploader* uploader_of(std::uint32_t group) const;
  // The sweeper of objects nothing names of `group` (null while it is not led, or without sweep
  // functions); a single node's of its one group.
  cold_sweeper* sweeper(std::uint32_t group);
  cold_sweeper* sweeper() { return sweeper(o_.upload.group.value()); }
  // The sweeps of the groups led now, summed.
  cold_sweeper_stats sweep_stats() const;
  // Sends the objects being filled now, however small (tests).
  void flush();

  // Runs one pass now (tests; the timer runs them otherwise).
  void pass();

 private:
  struct stream_state {
    streams::stream_offset fed{};  // handed to the uploader up to here
    std::uint64_t generation = 0;  // the incarnation `fed` counts in (0: start again from the cold end)
    std::uint32_t group = 0;
    bool reading = false;  // a read of its bytes is in flight
    // Its share of stats_.local_bytes and stats_.held_bytes, and the log's tail when counted.
    bool visible = false;
    std::uint64_t local = 0;
    std::uint64_t held = 0;
    std::uint64_t tail = 0;
    std::int64_t expiring_at = 0;  // its entry in expiring_ (0: none)
  };
  // A group this node leads: its uploads, under the term it leads in.
  struct led_group {
    std::uint64_t term = 0;
    std::unique_ptr<tier::uploader> uploader;
    std::unique_ptr<cold_sweeper> sweeper;  // after uploader: destroyed before it
    // Sequences of this term's objects reported and whose index record may still be applied here: the
    // sweep's settled sequence stays below the lowest (a record whose outcome is unknown stays for the
    // term).
    std::set<std::uint64_t> unsettled;
  };
  tier::upload_seq settled_seq(const led_group& g) const;
  // A single node's groups: its shard alone, led for the whole run under the run's term.
  class local_groups;
  void arm();
  // Starts uploads for the groups this node came to lead (their streams are read again from their
  // cold ends) and stops those of the groups it no longer leads (or leads in another term).
  void follow_leadership();
  void lead(std::uint32_t group, std::uint64_t term);
  void step_down(std::uint32_t group);
  // What one read of a stream gave.
  enum class fed {
    none,   // nothing more to give now
    more,   // bytes handed over; maybe more
    later,  // a read in flight, no room in its uploader, or not led here: look again later
  };
  // Reads `path` from where it was fed up to its durable tail (at most scan_bytes) and hands the bytes
  // over (at once when they are in memory, after a read of the log's segments otherwise).
  fed feed(const std::string& path);
  // Reads the streams written, in turn, until none has more or turn_bytes were handed over or turn_time
  // passed (the rest goes on at a later turn of the loop).
  void feed_turn();
  // A feed_turn at the loop's next turn (one at a time).
  void kick();
  // Some group led here has room for more bytes (a turn without it would only look).
  bool room() const;
  void mark_dirty(const std::string& path);
  void hand_over(const std::string& path, std::uint64_t generation, streams::stream_offset from, bool json,
                 streams::read_plan& plan);
  void on_uploaded(std::uint32_t group, const tier::uploaded_object& u);
  void on_recorded(const tier::uploaded_object& u, const result<tier::cold_apply_result>& applied);
  // Sets `path` back to its cold end: its bytes from there go again in a later object.
  void set_back(const std::string& path);
  // The stream's entry (made, with its group, when new).
  std::unordered_map<std::string, stream_state>::iterator track(const std::string& path);
  void untrack(std::unordered_map<std::string, stream_state>::iterator it);
  // Counts `path` again from its log and the index (untracked when it has no log any more).
  void count(const std::string& path);
  // count() of the streams whose expiry time came (a pass).
  void count_expired();
  // Over keep_bytes: forgets the records of streams whose bytes are in objects (forgettable_), oldest
  // segment first, and asks for a checkpoint.
  void reclaim();
  // Asks for the checkpoint a reclaim owes once checkpoint_interval passed since the last one asked.
  void checkpoint_if_due();

  partition& part_;
  cold_mover_options o_;
  tier::uploader::put_fn put_;
  std::unique_ptr<cold_groups> own_groups_;  // a single node's (o_.groups points at it)
  std::map<std::uint32_t, led_group> led_;
  std::unordered_map<std::string, stream_state> streams_;
  // Streams with bytes to read: the set, and the order in which they are read (each once in the queue).
  std::unordered_set<std::string> dirty_;
  std::deque<std::string> queue_;
  bool kicked_ = false;
  std::uint64_t turn_fed_ = 0;             // bytes handed over in this turn
  std::uint64_t appended_since_feed_ = 0;  // bytes appended since the last feed_turn
  raft::executor::timer_id timer_ = 0;
  bool stopped_ = false;
  cold_mover_stats stats_;
  // Visible streams with an expiry, by the time they expire unless renewed (one entry a stream, at the
  // earliest time counted; a renewed stream is counted at the old time and goes back in at the new).
  std::multimap<std::int64_t, std::string> expiring_;
  // Visible streams that hold records below their cold end (what a reclaim may forget).
  std::unordered_set<std::string> forgettable_;
  bool checkpoint_owed_ = false;
  std::optional<std::int64_t> checkpoint_asked_ms_;  // by the partition's clock
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace weir::replica
