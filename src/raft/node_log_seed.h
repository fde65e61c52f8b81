// node_log_seed: a node log written before its node runs, holding for each group a snapshot and nothing
// else, so that the node's raft groups start from those snapshots as from ones they took themselves (a
// cluster rebuilt from the cold tier's bucket: docs/cold-tier.md, "Restore"). Each group gets its term
// and an installed snapshot (trailing 0) at the given index with the given configuration; libraft then
// loads it at raft_start and hands the state to the group's restore callback.
//
// Blocking (writes and syncs the log): runs at start-up, before any loop; the log must not exist yet.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "raft/types.h"
#include "raft/wire_format.h"
#include "storage/env.h"

namespace weir::raft {

struct seeded_group {
  group_id group;
  log_index index;                  // the snapshot's last index
  term_id term;                     // its term, and the group's current term
  std::vector<wire::server> conf;   // the configuration at `index`
  std::span<const std::byte> data;  // the snapshot buffer as the replicator reads it
};

status seed_node_log(storage::env& env, const std::string& path, const std::vector<seeded_group>& groups);

}  // namespace weir::raft
