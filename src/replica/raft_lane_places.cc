// raft_lane's records in the node log: a committed command's stream bytes stay where the node log wrote
// them (apply_committed with a place), so each byte is written once per node. What that asks of the
// node log's segments: compaction keeps a segment the state or a group snapshot still references
// (renamed, out of raft's sight: node_log::set_keep), and such a kept segment is deleted once nothing
// references it (drop_kept, every raft_lane_options::kept_drop_ms).
#include "base/log.h"
#include "raft/node_log.h"
#include "replica/raft_lane.h"

namespace weir::replica {

bool raft_lane::keep_log_segment(std::uint32_t segment) {
  // While the lane opens, its state is not restored yet: everything stays.
  if (!places_open_) return true;
  // Walked once for a compaction's segments: any new reference (an apply, a restore, a pin) drops it.
  if (!needed_) needed_ = node_log_segments_needed();
  return needed_->contains(segment);
}

void raft_lane::open_node_log_places() {
  places_open_ = true;
  needed_.reset();
}

void raft_lane::pin_places(std::uint32_t key, const place_set& places) {
  needed_.reset();
  std::vector<std::uint64_t> data, node;
  for (const auto& [core, segment] : places) {
    if (core == node_core()) {
      node.push_back(segment);
    } else if (core == part_.options().core) {
      data.push_back(segment);
    }
  }
  part_.pin_snapshot_segments(key, std::move(data));
  if (node.empty()) {
    node_log_pins_.erase(key);
  } else {
    node_log_pins_[key] = std::move(node);
  }
}

std::set<std::uint64_t> raft_lane::node_log_segments_needed() const {
  const std::vector<std::uint64_t> referenced = part_.machine().referenced_segments(node_core());
  std::set<std::uint64_t> needed(referenced.begin(), referenced.end());
  for (const auto& [key, segments] : node_log_pins_) needed.insert(segments.begin(), segments.end());
  return needed;
}

raft_lane::kept_figures raft_lane::kept() const {
  const cluster::replicator& repl = *repl_;
  const raft::node_log& log = repl.log();
  return kept_figures{log.kept_segments().size(), log.kept_bytes(), kept_dropped_};
}

void raft_lane::arm_kept_drop() {
  if (stopped_ || opts_.kept_drop_ms <= 0) return;
  kept_timer_ = ex_.add_timer(std::chrono::milliseconds(opts_.kept_drop_ms), [this] {
    kept_timer_ = 0;
    if (stopped_) return;
    drop_kept();
    arm_kept_drop();
  });
}

void raft_lane::drop_kept() {
  raft::node_log& log = repl_->log();
  if (dropping_kept_ || log.kept_segments().empty()) return;
  std::set<std::uint64_t> needed = node_log_segments_needed();
  std::vector<std::uint64_t> going;
  for (std::uint32_t s : log.kept_segments())
    if (!needed.contains(s)) going.push_back(s);
  if (going.empty()) return;
  dropping_kept_ = true;
  log.drop_kept([needed = std::move(needed)](std::uint32_t s) { return needed.contains(s); },
                [this, going = std::move(going)](status st) {
                  dropping_kept_ = false;
                  if (st) kept_dropped_ += going.size();
                  if (!st) {
                    log::warn("weir cluster: lane {}: deleting kept node-log segments failed: {}", opts_.lane,
                              st.err().reason);
                  }
                  // A reader holding one open keeps it readable until it forgets it.
                  const auto& readers = part_.hot().readers();
                  if (node_core() < readers.size() && readers[node_core()] != nullptr) {
                    for (std::uint64_t s : going) readers[node_core()]->forget(storage::segment_id{s});
                  }
                });
}

}  // namespace weir::replica
