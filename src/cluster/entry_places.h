// entry_places: where this node's node log holds each of a group's entries that are stored and not yet
// applied (raft::node_log::set_on_placed), so that applying one can say where its command's bytes sit on
// disk and a stream record may point there instead of being written again (docs/replication.md, "Stream
// data on a cluster node").
//
// A place is only ever an optimisation: an entry applied without one is written to the data log. So a
// report this record cannot order exactly (an entry carried forward by compaction while later ones wait)
// may drop places, never keep a wrong one: a rewrite of an index (a truncate, then new entries) drops
// every place from that index on before it is recorded.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

#include "raft/node_log.h"

namespace weir::cluster {

class entry_places {
 public:
  // Entry `index` was written (again) at `at`; `applied`: the group's last applied index (reports of
  // applied entries, carried forward by compaction, are of no use).
  void placed(std::uint64_t index, const raft::entry_place& at, std::uint64_t applied) {
    if (index <= applied || at.segment == 0) return;
    while (!q_.empty() && q_.back().first >= index) q_.pop_back();
    q_.emplace_back(index, at);
  }
  // The place of entry `index`, which is being applied, if known; forgets it and every place below it.
  std::optional<raft::entry_place> take(std::uint64_t index) {
    while (!q_.empty() && q_.front().first < index) q_.pop_front();
    if (q_.empty() || q_.front().first != index) return std::nullopt;
    raft::entry_place at = q_.front().second;
    q_.pop_front();
    return at;
  }
  std::size_t size() const { return q_.size(); }

 private:
  std::deque<std::pair<std::uint64_t, raft::entry_place>> q_;  // by index, ascending
};

}  // namespace weir::cluster
