#include "streams/fork_sweep.h"

#include <algorithm>

namespace weir::streams {

fork_sweep::fork_sweep(const state_machine& sm, ports p, std::int64_t min_age_ms)
    : sm_(sm), ports_(std::move(p)), min_age_ms_(min_age_ms) {}

fork_sweep::~fork_sweep() = default;

void fork_sweep::run(std::int64_t now_ms) {
  if (running_) return;
  ++stats_.passes;
  now_ms_ = now_ms;
  // The sources of the groups this node leads: one node sweeps each (and any other that believes it
  // leads does no harm: every step is idempotent).
  todo_ = sm_.references_by_origin(
      [this](std::string_view source) { return ports_.leads(ports_.group_of(source)); },
      now_ms - min_age_ms_);
  std::reverse(todo_.begin(), todo_.end());
  running_ = true;
  next();
}

void fork_sweep::next() {
  if (todo_.empty()) {
    running_ = false;
    return;
  }
  state_machine::held_reference r = std::move(todo_.back());
  todo_.pop_back();
  ports_.find_fork(ports_.group_of(r.fork), r.fork, r.origin, guarded([this, r](std::optional<bool> found) {
                     if (!found) return next();
                     check(r, *found);
                   }));
}

void fork_sweep::check(const state_machine::held_reference& r, bool fork_found) {
  ++stats_.checked;
  // Given back meanwhile (its release arrived), or the fork is there (this node applied its group this far).
  if (!sm_.holds_reference(r.source, r.origin)) return next();
  if (fork_found) {
    ++stats_.kept;
    return next();
  }
  fork_tombstone_command t{r.fork, r.origin, ports_.group_of(r.fork), now_ms_};
  ports_.propose(t, guarded([this, r](const outcome* o) {
                   if (o == nullptr) return next();  // the next pass tries again
                   if (o->fork_exists) {
                     ++stats_.kept;  // created after the read: it keeps its reference
                     return next();
                   }
                   ++stats_.tombstoned;
                   release(r);
                 }));
}

void fork_sweep::release(const state_machine::held_reference& r) {
  ports_.propose(fork_release_command{r.source, r.origin}, guarded([this](const outcome* o) {
                   // Not applied (or not known to be): the tombstone stays, and the next pass sends both
                   // again.
                   if (o != nullptr && o->mutated) ++stats_.recovered;
                   next();
                 }));
}

}  // namespace weir::streams
