// applied_waits: how far this node applied each raft group, and the callers waiting for a group to get
// somewhere. Groups apply independently, so on a node one group may be behind another: a fork (in one
// group) whose source lives in another group is read only once the source's group applied the fork's
// retain there (docs/replication.md, "Forks"; replica/raft_lane.cc uses it, and so does the cluster
// simulation).
//
// Lives on the executor given to the constructor (the replicator's); every method runs there.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "raft/executor.h"

namespace weir::cluster {

class applied_waits {
 public:
  struct position {
    std::uint32_t group = 0;
    std::uint64_t index = 0;
  };
  // What to wait for next: a position, or nothing when the chain ends.
  using next_fn = std::function<std::optional<position>()>;

  // `timeout`: how long a chain may wait in all (like a read index's deadline).
  applied_waits(raft::executor& ex, std::uint32_t groups, std::chrono::milliseconds timeout);
  ~applied_waits();
  applied_waits(const applied_waits&) = delete;
  applied_waits& operator=(const applied_waits&) = delete;

  // This node applied `group` through `index` (an entry's apply, or a snapshot restored at `index`).
  // Waiters it satisfies go on from a task posted now, never from inside this call.
  void applied(std::uint32_t group, std::uint64_t index);
  std::uint64_t applied_index(std::uint32_t group) const;

  // Walks a chain: asks `next` for a position, waits until its group applied that far (at once when it
  // has), asks again, and so on until `next` gives nothing: then done(true). done(false) when the
  // timeout passes first. `next` runs between waits, so it may look at state that the applies it waited
  // for created (a fork of a fork: the next link is known once the first source's group has caught up).
  // `done` always runs from a posted task or a timer, never inside this call. A position in a group
  // beyond the configured count counts as reached.
  void wait_chain(next_fn next, std::function<void(bool)> done);

  // Chains waiting (tests, status).
  std::size_t waiting() const { return chains_.size(); }

 private:
  struct chain {
    next_fn next;
    std::function<void(bool)> done;
    raft::executor::timer_id timer = 0;
    std::optional<position> at;  // registered in waiting_ under this position
  };
  // Runs the chain until it waits or ends.
  void advance(std::uint64_t id);
  void finish(std::uint64_t id, bool ok);
  void post(std::function<void()> fn);

  raft::executor& ex_;
  std::chrono::milliseconds timeout_;
  std::vector<std::uint64_t> applied_;                                // per group
  std::vector<std::multimap<std::uint64_t, std::uint64_t>> waiting_;  // per group: index -> chain id
  std::unordered_map<std::uint64_t, chain> chains_;
  std::uint64_t next_id_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for posted tasks and timers
};

}  // namespace weir::cluster
