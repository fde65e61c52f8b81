// Debian's libraft-dev 0.15 header has no extern "C" of its own: every weir file includes it through
// this one. Only the raft module and its tests may include it (the rest of weir sees weir types).
#pragma once

extern "C" {
#include <raft.h>
}
