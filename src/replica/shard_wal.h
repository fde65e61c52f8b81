// shard_wal: one core's write-ahead log as its stream_shard uses it. Owns the core's log_writer and
// makes three promises to the shard:
//
//   * in-order completion: every command the shard applies gets a completion (its response, the wake
//     of live readers, subscription events) that runs only after the command's log record is durable,
//     and completions run in the order the commands were applied, also for commands that changed
//     nothing (a producer duplicate must not be acknowledged before the append it duplicates);
//   * a durable view: while a stream has appends or a create in flight, reads see the stream as it was
//     after its last durable command (tail, closed flag, existence), never bytes that a crash could
//     take back;
//   * failure isolation: a record that fails to be written (ENOSPC: storage_full, EIO and others:
//     storage_unavailable; protocol/errors.cc gives their statuses) fails its command and every command
//     applied after it (they were applied on top of it in memory), and the shard refuses further writes
//     until a restart replays the log (docs/storage.md, "In the server").
//
// With no writer (tests, or --fsync never still uses one) completions run at once.
//
// Lives on the shard's core: every method runs on that loop; the writer's completions are posted there.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/string_map.h"
#include "io/event_loop.h"
#include "replica/errc.h"
#include "storage/log_writer.h"
#include "streams/state_machine.h"

namespace weir::replica {

// How a command ended once its fate on disk is known.
struct durable_result {
  streams::outcome o;
  // ok: durable (or nothing to log); storage_full or storage_unavailable: the log write failed.
  errc failure = errc::ok;
  std::string reason;  // what failed, for the log (never sent to a client)
  // Where the command's payload (an append's body, a create's initial data) sits in the log, once
  // durable; segment 0 when there was none. `core` is left 0 for the shard to fill in.
  streams::disk_location at;
  std::uint32_t data_size = 0;  // the payload's size
};

class shard_wal {
 public:
  using completion = std::function<void(durable_result&)>;

  // `writer` may be null: nothing is logged and every completion runs at once.
  // `last`: the lsn of the last record the log holds already (what recovery replayed), so that a
  // checkpoint taken before the first new write covers exactly what the state holds.
  explicit shard_wal(std::unique_ptr<storage::log_writer> writer, storage::lsn last = storage::lsn{0});
  ~shard_wal();
  shard_wal(const shard_wal&) = delete;
  shard_wal& operator=(const shard_wal&) = delete;

  bool logging() const { return writer_ != nullptr; }
  storage::log_writer* writer() { return writer_.get(); }
  // Commands queued behind the log (applied, not yet completed), and the bytes of their records.
  std::size_t in_flight() const { return ops_.size(); }
  std::size_t in_flight_bytes() const { return in_flight_bytes_; }
  // Bytes of records logged since the counter was last reset (the checkpoint trigger).
  std::uint64_t logged_bytes() const { return logged_bytes_; }
  void reset_logged_bytes() { logged_bytes_ = 0; }
  // The lsn of the newest record whose write completed (every record up to it is durable once no
  // command is in flight).
  storage::lsn last_lsn() const { return last_lsn_; }
  // Runs `fn` (once) as soon as no command is in flight: at once if none is.
  void when_idle(std::function<void()> fn);
  // Called once when a log write first fails (the shard schedules a rebuild from the log).
  void on_failure(std::function<void()> fn) { on_failure_ = std::move(fn); }
  // The failure can be undone by rebuilding the state from the log (not a poisoned log).
  bool recoverable() const { return failed() && !poisoned_; }
  // The state was rebuilt from the log: accept writes again. Only while no command is in flight.
  void clear_failure();
  // A log write failed: the in-memory state is ahead of the log, writes are refused until restart.
  bool failed() const { return failure_ != errc::ok; }
  errc failure() const { return failure_; }
  const std::string& failed_reason() const { return failed_reason_; }

  // Call before applying `c` to `sm`: remembers the durable view of the stream `c` may change.
  void before(const streams::command& c, const streams::state_machine& sm, std::int64_t now_ms);
  // Call right after: logs `c` if it mutated and queues `done` behind every earlier command.
  void after(const streams::command& c, streams::outcome o, completion done);

  // Logs a record of another kind than a command (`type`: replica::cold_index_record_type), already
  // applied by the caller, in order with the commands: `done` runs once it is durable, after the
  // completions of the commands before it. A failed write fails it like a command.
  void log_record(std::uint8_t type, std::vector<std::byte> bytes, completion done);

  // The durable view of `rr` (a read or head of `path`): clamps the tail, the closed flag and the
  // data to what is durable.
  void clamp(const std::string& path, streams::read_result& rr) const;

 private:
  // A stream's durable view. Kept after its commands drain (one allocation per stream, not per
  // append); in force only while `in_flight` > 0 or, after a log failure, while `pinned`.
  struct view {
    bool exists = false;
    streams::stream_offset tail{};
    bool closed = false;
    std::uint32_t in_flight = 0;
    bool pinned = false;
    bool in_force() const { return in_flight > 0 || pinned; }
  };
  struct op {
    durable_result r;
    completion done;
    view* viewed = nullptr;  // non-null: this op holds a reference (in_flight) on that view
    bool ready = false;
    std::size_t bytes = 0;                     // record size, counted in in_flight_bytes_
    std::optional<std::uint32_t> data_offset;  // where the payload starts in the record
    std::uint32_t data_size = 0;
  };

  // Drops views no longer in force once they outnumber those in force (amortized over the inserts).
  void sweep_views();

  // An op with nothing to log: completed now, or queued ready behind the ops in flight.
  void complete_unlogged(op next);
  // Queues `next` and hands its record to the writer (the writer copies `bytes`).
  void append_op(op next, std::uint8_t type, std::span<const std::byte> bytes, bool lone);
  void on_logged(std::uint64_t seq, const result<storage::append_ack>& r);
  void drain();

  std::unique_ptr<storage::log_writer> writer_;
  string_map<view> views_;  // streams that had a create or append logged (see view)
  std::size_t views_in_force_ = 0;
  std::optional<view> staged_;  // from before(), consumed by after()
  std::deque<op> ops_;
  std::uint64_t front_seq_ = 0;  // sequence number of ops_.front()
  errc failure_ = errc::ok;
  std::string failed_reason_;
  std::size_t in_flight_bytes_ = 0;
  std::uint64_t logged_bytes_ = 0;
  storage::lsn last_lsn_{0};
  std::vector<std::function<void()>> idle_waiters_;
  // Consecutive logged commands that found nothing else in flight (the log's lone-writer hint:
  // storage::log_options::inline_after).
  static constexpr std::uint32_t lone_after = 4;
  std::uint32_t lone_appends_ = 0;
  std::string scratch_;  // the encoding of the command being logged (the writer copies it)
  std::function<void()> on_failure_;
  bool poisoned_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace weir::replica
