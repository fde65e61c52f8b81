// fork_sweep: recovers the fork references of a cluster whose release was lost (docs/replication.md,
// "Forks"). A release is proposed by the node that applied the fork's delete as its own proposal; it is
// lost when that node stops first, or when the delete's proposal timed out there before it committed.
// The source then holds the reference for good (a soft-deleted source is never erased).
//
// A pass, run by each node for the source groups it leads: for every reference by origin whose retain
// is older than `min_age_ms` (longer than a fork's create can take to be proposed and commit), after a
// read index of the fork's group (its path names it), look for a fork at that path with that origin
// (ports::find_fork: the fork may live on another lane's machine).
// Found: kept. Not found: first a fork_tombstone_command in the fork's group (unless the fork is
// created before it applies: then kept), so that no create of it still in some log can bring the fork
// back; then the release by origin in the source's group (idempotent: a release that did arrive, or a
// second sweep, changes nothing). One reference at a time; a step that fails ends the reference's turn
// (the next pass tries again: every step may be repeated).
//
// No I/O of its own: the caller gives the ports (the server's replication, the cluster simulation's
// replicator). Lives on the thread that applies the groups' entries to `sm`; not thread-safe. The
// ports' callbacks may run after the sweep is destroyed: they then do nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "streams/state_machine.h"

namespace weir::streams {

class fork_sweep {
 public:
  struct ports {
    // Whether this node leads `group` now.
    std::function<bool(std::uint32_t group)> leads;
    // The raft group of a stream's path.
    std::function<std::uint32_t(std::string_view path)> group_of;
    // Once this node applied every entry of `group` (the fork's) committed before the call (a read
    // index): whether it holds a fork at `fork` made with `origin` (state_machine::fork_exists, on the
    // machine that holds the fork, which may be another lane's); nullopt when the read index failed.
    // Never answers inside this call.
    std::function<void(std::uint32_t group, const std::string& fork, const fork_origin& origin,
                       std::function<void(std::optional<bool>)> found)>
        find_fork;
    // Proposes `c` in its path's group; `done` gets this node's outcome of it once applied, or nullptr
    // when the proposal failed or its outcome is unknown. Never calls `done` inside this call.
    std::function<void(const command& c, std::function<void(const outcome*)> done)> propose;
  };
  struct counters {
    std::uint64_t passes = 0;
    std::uint64_t checked = 0;     // references looked at (fork's group read)
    std::uint64_t kept = 0;        // their fork exists
    std::uint64_t tombstoned = 0;  // tombstone applied with no fork: the release follows
    std::uint64_t recovered = 0;   // releases the sweep applied that gave a reference back
  };

  fork_sweep(const state_machine& sm, ports p, std::int64_t min_age_ms);
  ~fork_sweep();
  fork_sweep(const fork_sweep&) = delete;
  fork_sweep& operator=(const fork_sweep&) = delete;

  // Starts a pass at `now_ms` (the clock the retains' command times come from) unless one is running.
  void run(std::int64_t now_ms);
  bool running() const { return running_; }
  const counters& stats() const { return stats_; }

 private:
  void next();
  void check(const state_machine::held_reference& r, bool fork_found);
  void release(const state_machine::held_reference& r);
  // Runs `fn` only while this sweep exists.
  template <class F>
  auto guarded(F fn) {
    return [alive = std::weak_ptr<bool>(alive_), fn = std::move(fn)](auto&&... args) mutable {
      if (alive.lock()) fn(std::forward<decltype(args)>(args)...);
    };
  }

  const state_machine& sm_;
  ports ports_;
  std::int64_t min_age_ms_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool running_ = false;
  std::int64_t now_ms_ = 0;
  std::vector<state_machine::held_reference> todo_;  // this pass's, in reverse order
  counters stats_;
};

}  // namespace weir::streams
