// orphan_sweep: decides, exactly, which listed objects of one group may be deleted (docs/cold-tier.md,
// "Orphans and garbage"). weir never deletes after an ambiguous upload or commit; what such an upload
// leaves behind is found here, by listing the group's prefix, and removed only once nothing can ever
// name it again. An object listed under e<epoch>/g<group>/ is deleted when all of these hold:
//   1. its key is an object key of this epoch and group (anything else in the bucket is never touched);
//   2. the index does not name it, and no retained restore snapshot does;
//   3. no index record for it can still be applied: its term is older than the leader's and the leader
//      has applied an entry of its own term (in Raft, every older entry that will ever commit is then
//      applied), or its term is the leader's and its sequence is below the uploader's settled sequence
//      (every report before it has been applied);
//   4. it met 1-3 in a sweep at least `grace` earlier: a reader that found it in the index just before
//      its stream was dropped has finished with it.
// Runs on the leader's executor, fed one listing page at a time (object_store_workers does the LIST and
// the DELETEs). Keeps a candidate map of keys first seen; a pass (begin_pass .. end_pass) forgets those
// no longer listed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tier/object_key.h"
#include "tier/object_store.h"

namespace weir::tier {

struct sweep_state {
  cold_epoch epoch;
  cold_group group;
  leader_term term;                                       // the leader's (this node's) term
  bool term_settled = false;                              // it has applied an entry of that term
  upload_seq settled_seq;                                 // its uploader's reports below this are applied
  std::function<bool(std::string_view key)> indexed;      // the index names the key
  std::function<bool(std::string_view key)> in_snapshot;  // a retained restore snapshot names it
  std::int64_t now_ms = 0;
  std::int64_t grace_ms = 10 * 60 * 1000;
};

class orphan_sweep {
 public:
  void begin_pass();
  // The keys of `page` to delete now.
  std::vector<std::string> consider(const list_page& page, const sweep_state& s);
  // Forgets candidates that this pass did not list (deleted, by us or by the operator).
  void end_pass();

  std::size_t candidates() const { return first_seen_.size(); }

 private:
  struct seen {
    std::int64_t first_ms = 0;
    std::uint64_t pass = 0;
  };
  std::unordered_map<std::string, seen> first_seen_;
  std::uint64_t pass_ = 0;
};

}  // namespace weir::tier
