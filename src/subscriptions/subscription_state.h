// subscription_state: one subscription's links, cursors, generation, current wake, lease and retry
// schedule (PROTOCOL.md 6.1, 7, 7.3). Pure: time comes in as arguments (monotonic ms), ids come from the
// caller, nothing here does I/O or schedules timers; the subscription_manager turns the answers into
// webhook requests, wake-stream appends and timers. Lives on the service's home loop.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "subscriptions/delivery_request.h"
#include "subscriptions/subscription_config.h"

namespace weir::subscriptions {

// PROTOCOL.md 8: offsets are opaque but lexicographically ordered; "-1" is the start of a stream.
inline constexpr std::string_view k_start_offset = "-1";
// True when `tail` is past `acked` (acked is last-processed inclusive). A tail made only of '0' and '_'
// is the tail of an empty stream, which is never past the start.
bool offset_after(std::string_view tail, std::string_view acked);

struct stream_link {
  bool explicit_link = false;
  bool glob_link = false;
  std::string acked_offset{k_start_offset};
  std::optional<std::string> tail_offset;  // last known tail; nullopt while the stream does not exist

  // PROTOCOL.md 6.1: explicit takes precedence in serialised responses.
  std::string_view link_type() const { return explicit_link ? "explicit" : "glob"; }
  bool has_pending() const { return tail_offset && offset_after(*tail_offset, acked_offset); }
};

// One stream in a wake snapshot (webhook notification, claim answer).
struct wake_stream_entry {
  std::string path;
  std::string link_type;
  std::string acked_offset;
  std::string tail_offset;
  bool has_pending = false;
};

struct wake_state {
  std::string wake_id;
  std::uint64_t generation = 0;
  std::vector<wake_stream_entry> snapshot;
  std::optional<std::string> holder;   // pull-wake: the worker that claimed it
  std::int64_t lease_deadline_ms = 0;  // monotonic; 0 = no lease running
};

enum class fence_result { ok, fenced, not_claimed };

class subscription_state {
 public:
  subscription_state(std::string id, subscription_config cfg, std::int64_t created_at_wall_ms);

  const std::string& id() const { return id_; }
  const subscription_config& config() const { return cfg_; }
  std::int64_t created_at_wall_ms() const { return created_at_wall_ms_; }
  const std::map<std::string, stream_link>& links() const { return links_; }
  const std::optional<wake_state>& current_wake() const { return wake_; }
  std::uint64_t generation() const { return generation_; }
  bool failed() const { return failed_; }
  std::int64_t retry_at_ms() const { return retry_at_ms_; }
  int failed_attempts() const { return failed_attempts_; }
  // Webhook retries gave up (max attempts reached): no wake starts until resume().
  bool paused() const { return paused_; }

  // Restores persisted cursors and counters (subscription_store). Tails are unknown until the streams
  // report them again; `retry_at_ms` is monotonic (0 = none).
  void restore(std::map<std::string, stream_link> links, std::uint64_t generation, bool failed,
               int failed_attempts, std::int64_t retry_at_ms, bool paused = false);

  // --- membership (PROTOCOL.md 6.2, 6.4) ---
  // Links at the stream's current tail (backfill, explicit add of an existing stream): no history is
  // replayed. An existing link keeps its cursor and only gains the flag.
  void link_at_tail(const std::string& path, bool explicit_link, const std::string& tail);
  // Links before the stream's first data (stream created or first seen by an append after the
  // subscription existed; explicit add of a stream that does not exist yet).
  void link_at_start(const std::string& path, bool explicit_link, std::optional<std::string> tail);
  // Removes only the explicit flag; the glob link stays if the pattern matches (PROTOCOL.md 6.4).
  void unlink_explicit(const std::string& path);
  bool linked(const std::string& path) const { return links_.count(path) != 0; }

  // --- stream events ---
  // The stream's tail moved; ignored for unlinked streams. Tails only move forward.
  void on_tail(const std::string& path, const std::string& tail);
  // A new stream under a linked path (created again after a delete): its cursor starts over.
  void on_created(const std::string& path, const std::string& tail);
  void on_deleted(const std::string& path);

  bool has_pending() const;

  // --- wakes (PROTOCOL.md 7, 7.3) ---
  // Starts a new wake (generation + 1) when there is pending work, no wake in flight, no lease held and
  // no retry back-off running. Webhook wakes start their lease now. Returns the new wake or nullptr.
  const wake_state* try_start_wake(std::int64_t now_ms, std::string wake_id);

  // Pull-wake claim: takes the unclaimed wake (refreshing its snapshot) or opens a new generation.
  // nullptr with `busy` set when a live lease is held by someone.
  const wake_state* claim(const std::string& worker, std::int64_t now_ms, std::string new_wake_id,
                          bool& busy);

  // PROTOCOL.md 7.3: request generation and wake id must match the current wake.
  fence_result check_fence(std::uint64_t generation, std::string_view wake_id) const;

  // Validates every ack (stream linked) before moving any cursor. False: nothing changed.
  bool apply_acks(const std::vector<stream_ack>& acks);

  // Callback (webhook) or ack (pull-wake) after a passed fence check: applies acks, then on `done`
  // clears the wake; otherwise extends the lease. Returns next_wake (pending work remains after done).
  bool finish_or_extend(bool done, std::int64_t now_ms);
  // Release (pull-wake) after a passed fence check: drops the wake and lease.
  void release();

  // Webhook delivery answered 2xx for wake `generation`: status active; a synchronous {"done":true}
  // auto-acks the snapshot's tails and clears the wake (PROTOCOL.md 7.1). False when the wake is stale.
  bool on_delivered(std::uint64_t generation, bool done);
  // Delivery (or a wake-stream append) failed: clears the wake and schedules a retry with exponential
  // back-off from 1 s to 60 s and the given jitter in [-0.2, 0.2] (PROTOCOL.md 7.1). Returns the delay,
  // or nullopt when the wake is stale or when this was failure number `max_attempts` (> 0): then no retry
  // is scheduled, the subscription stays failed and is paused.
  std::optional<std::int64_t> on_delivery_failed(std::uint64_t generation, std::int64_t now_ms, double jitter,
                                                 int max_attempts = 0);
  // Ends a pause: the failure count starts over and pending work may wake again.
  void resume();
  // The retry time arrived.
  void on_retry_due() {
    retry_at_ms_ = 0;
    counters_changed_ = true;
  }

  // Lease timer: clears holder and wake when the lease of `generation` has run out (PROTOCOL.md 7.3).
  bool expire_lease(std::uint64_t generation, std::int64_t now_ms);

  // --- persistence (subscription_log): what changed since the last take_changes() ---
  // Paths whose persisted fields (flags, acked_offset, existence) changed; tail moves are not changes.
  const std::set<std::string>& changed_links() const { return changed_links_; }
  // generation, failed, failed_attempts, retry time or paused changed.
  bool counters_changed() const { return counters_changed_; }
  void take_changes() {
    changed_links_.clear();
    counters_changed_ = false;
  }

 private:
  std::vector<wake_stream_entry> snapshot() const;

  std::string id_;
  subscription_config cfg_;
  std::int64_t created_at_wall_ms_;
  std::map<std::string, stream_link> links_;
  std::uint64_t generation_ = 0;
  std::optional<wake_state> wake_;
  bool failed_ = false;
  int failed_attempts_ = 0;
  std::int64_t retry_at_ms_ = 0;  // monotonic; 0 = no back-off
  bool paused_ = false;
  std::set<std::string> changed_links_;
  bool counters_changed_ = false;
};

}  // namespace weir::subscriptions
