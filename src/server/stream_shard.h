// stream_shard: the streams owned by one core. Holds that core's state machine, its live readers
// (long-poll waiters and SSE sessions, woken the moment an append commits) and the TTL sweeper.
//
// Lives on one core: every method runs on loop() (other cores reach it with loop().post(...)).
// Requests arrive already validated (protocol::stream_request); answers go back to the connection's
// core through reply.h. In a cluster the partition's commit path is a raft lane (replica::raft_lane,
// through server/replication), whose host this shard is: it carries out what the lane applies (wakes
// live readers, reports stream events, proposes fork releases) and posts the lane's tasks to other lanes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "base/metrics.h"
#include "http/exchange.h"
#include "io/event_loop.h"
#include "protocol/stream_request.h"
#include "raft/loop_executor.h"
#include "replica/partition.h"
#include "replica/raft_lane.h"
#include "streams/state_machine.h"

namespace weir::server {

class node;
class live_reader;
class replication;

struct shard_options {
  std::int64_t long_poll_timeout_ms = 30'000;
  std::size_t read_chunk_bytes = 64 * 1024;
  std::int64_t sse_close_after_ms = 60'000;
  std::int64_t sse_keep_alive_ms = 15'000;
  replica::partition_options part;                 // the shard's index, hot bytes, checkpoints, cold reads
  std::size_t max_in_flight = 16384;               // commands waiting for the log before writes get 503
  std::size_t max_in_flight_bytes = 256ull << 20;  // and their bytes
  // A cluster node's admission: writes beyond this many bytes proposed and not applied yet wait in
  // arrival order (at most admit_wait_ms, then 503); 0: none.
  std::size_t admit_bytes = 0;
  std::int64_t admit_wait_ms = 10'000;
  std::int64_t deleted_path_hold_ms = 0;  // a deleted stream's path cannot be re-created this long
  std::size_t max_streams = 0;            // streams the node holds before creates get 403; 0: any
  // A cluster node's fork sweep (streams/fork_sweep.h): a pass this often over the fork references of
  // the source groups it leads (0: none), looking at references whose retain is older than the min age:
  // longer than the proposals' longest wait (a backlog keeps a proposal up to 30 s), so that a fork's
  // create has had its chance to commit.
  std::int64_t fork_sweep_ms = 30'000;
  std::int64_t fork_sweep_min_age_ms = 120'000;
};

class stream_shard final : public replica::partition_host, public replica::lane_host {
 public:
  stream_shard(node& owner, io::event_loop& loop, const clock_source& clock, shard_options opts);
  ~stream_shard() override;
  stream_shard(const stream_shard&) = delete;
  stream_shard& operator=(const stream_shard&) = delete;

  io::event_loop& loop() { return *loop_; }
  const shard_options& options() const { return opts_; }
  // The streams below HTTP: state machine, commit path, tiers (replica/partition.h).
  replica::partition& part() { return part_; }
  const replica::partition& part() const { return part_; }
  node& owner() { return *node_; }
  std::int64_t now_ms() const { return clock_->wall_ms(); }

  // Serves one stream request (the stream's path hashes to this shard). `live_id` names a long-poll or
  // SSE request so the connection's core can cancel it (cancel_live) when the client goes away.
  void handle(protocol::stream_request req, http::exchange ex, std::uint64_t live_id);
  void cancel_live(std::uint64_t live_id);

  // Fork step 1, on the source's shard: validate and take a reference (PROTOCOL.md 4.2). `done` runs
  // here once the retain is durable (in the log before the fork's create is applied).
  void fork_retain(const streams::fork_retain_command& c, replica::shard_wal::completion done);
  // Applies a command on this shard; once it is durable (shard_wal) carries out its effects (wake
  // readers, releases on other shards, subscription events) and runs `done`. Returns the outcome at
  // once (for reads that only need to know whether the stream exists).
  streams::outcome execute(const streams::command& c, replica::shard_wal::completion done = {});

  // Cluster mode (docs/replication.md): before the loop runs, route every command through raft. Commands
  // then change the state machine only when committed (replica::raft_lane::apply_committed), on every
  // node, in each group's log order.
  void attach_replication(std::unique_ptr<replication> r);
  replication* replicated() { return repl_.get(); }
  // Cluster mode: proposals in flight went down (called inside libraft's apply). Writes that wait for
  // admission go on in order on a later turn: one task queued at a time, only once there is room.
  void in_flight_went_down();
  struct admission_counts {
    std::uint64_t waiting = 0;  // writes waiting now
    std::uint64_t waited = 0;   // writes that waited, then went on
    std::uint64_t expired = 0;  // writes that waited admit_wait_ms and got 503
  };
  admission_counts admission() const { return {admission_.size(), admitted_after_wait_, admission_expired_}; }
  // Live readers.
  std::size_t live_readers() const { return readers_.size(); }  // this loop only (tests)
  void add_reader(const std::string& path, std::shared_ptr<live_reader> r, std::uint64_t live_id);
  void remove_reader(const std::string& path, const live_reader* r, std::uint64_t live_id);

  std::string cursor(const std::optional<std::string>& client_cursor);

  void start();  // the TTL sweeper
  void stop();   // ends every live reader (shutdown)

  // partition_host: a durable command's effects, a rebuilt state, held writes resumed.
  void on_durable(const streams::outcome& o) override { effects(o); }
  void on_rebuilt() override;
  void on_writes_resumed() override { resume_deferred(); }

  // lane_host (cluster mode): the lane's tasks on other lanes' loops, what its applies and restores do
  // here, its proposals going down, and a failed node log.
  void post_to_lane(std::uint32_t lane, std::function<void()> fn) override;
  void on_applied(const streams::outcome& o, bool releases) override { effects(o, releases); }
  void on_restored(const streams::state_machine::path_predicate& in_part,
                   const std::vector<std::string>& removed) override;
  void on_in_flight_down() override { in_flight_went_down(); }
  void fail(const std::string& why) override;

 private:
  void handle_create(protocol::stream_request req, http::exchange ex);
  void finish_fork(protocol::stream_request req, http::exchange ex, replica::durable_result retained);
  // The record a fork's sub-offset cuts could not be read (`why`): the source's reference goes back and
  // the client gets 503.
  void fork_source_unreadable(const protocol::stream_request& req, http::exchange ex,
                              std::optional<streams::fork_origin> origin, const std::string& why);
  // The fork's create, once the prefix's record (if any) is in memory.
  void create_fork(protocol::stream_request req, http::exchange ex, replica::durable_result retained);
  // Answers 507/503 when the log failed earlier (writes are refused until a restart), or 503 when too
  // many commands wait for the log.
  bool refuse_write(http::exchange ex, const protocol::cors_grant& cors);
  // Holds a write back while a checkpoint waits for the commands in flight.
  bool defer_write(protocol::stream_request& req, http::exchange ex, std::uint64_t live_id);
  // Admission (cluster node): queues a write while the bytes proposed and not applied yet reach
  // admit_bytes, and every write behind one that waits (their order is kept).
  bool admit_later(protocol::stream_request& req, http::exchange ex, std::uint64_t live_id);
  void expire_waiting_writes();
  void arm_admission_timer();  // every 250 ms while writes wait: expire_waiting_writes
  void admit_waiting();
  void resume_deferred();
  void handle_read(protocol::stream_request req, http::exchange ex, std::uint64_t live_id);
  // The answer of a catch-up or long-poll read once its plan is complete (`meta`: the stream as read).
  void answer_read(protocol::stream_request req, http::exchange ex, std::uint64_t live_id,
                   const streams::stream_meta& meta, streams::read_result& rr, const status& io);
  // The read itself, once the stream's TTL was renewed (and, in a cluster, the read linearized).
  void serve_read(protocol::stream_request req, http::exchange ex, std::uint64_t live_id);
  // `releases`: carry out o.release (always on a single node; in a cluster only on the proposing node).
  void effects(const streams::outcome& o, bool releases = true);
  // Drops a fork's reference on its source: propose_release on the source's shard.
  void release(const streams::fork_release_command& r);
  // Submits the release, and again a second later while no cluster leader takes it or, for a release by
  // origin (idempotent), while its outcome is unknown. A release without an origin (a single node's, or a
  // fork created before creates carried one) whose outcome is unknown is not sent again (it may apply,
  // and twice would free a source that forks still read); if it was lost the count stays one too high.
  // A release by origin lost with this node is recovered by the fork sweep.
  void propose_release(const streams::fork_release_command& r);
  void wake(const std::string& path, bool removed);
  void sweep();

  node* node_;
  io::event_loop* loop_;
  raft::loop_executor ex_;  // loop_ as the partition's executor
  const clock_source* clock_;
  shard_options opts_;
  replica::partition part_;
  streams::state_machine& sm_;  // part_'s
  std::unique_ptr<replication> repl_;
  std::unordered_set<io::event_loop::timer_id> release_retries_;  // propose_release's, cancelled by stop()
  std::deque<std::function<void()>> deferred_;
  struct waiting_write {
    std::int64_t since_ms = 0;
    http::exchange ex;
    protocol::cors_grant cors;
    std::function<void()> run;
  };
  std::deque<waiting_write> admission_;
  bool admitting_ = false;
  bool admit_posted_ = false;  // an admit_waiting task is queued on the loop
  std::uint64_t admitted_after_wait_ = 0;
  std::uint64_t admission_expired_ = 0;
  io::event_loop::timer_id admission_timer_ = 0;
  std::unordered_multimap<std::string, std::shared_ptr<live_reader>> readers_;
  std::unordered_map<std::uint64_t, std::shared_ptr<live_reader>> by_id_;
  std::mt19937 rng_;
  io::event_loop::timer_id sweep_timer_ = 0;
  bool stopped_ = false;
};

}  // namespace weir::server
