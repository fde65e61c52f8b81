// Debian's libraft-dev 0.15 header has no extern "C" of its own: every weir file includes it through
// this one. Only the raft module and its tests may include it (the rest of weir sees weir types).
#pragma once

extern "C" {
#include <raft.h>
}

// A node applies an entry only after its own node log synced it (docs/replication.md, "Apply after the
// node's own sync"): libraft 0.15, which defines no version macro, commits only up to the leader's own
// last_stored. From 0.17.1 on (which defines RAFT_VERSION_NUMBER) a quorum of followers commits without
// the leader's own write: before building against such a release, make the leader's apply wait for its
// own sync (tests/unit/raft/apply_after_sync_test.cc fails until then).
#ifdef RAFT_VERSION_NUMBER
#error "libraft newer than 0.15: see docs/replication.md, \"Apply after the node's own sync\""
#endif
