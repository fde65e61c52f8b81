// placement: which shard of a node owns a stream. A stream's shard is a hash of its path modulo the
// shard count a data directory was created with (wal_recovery.h, recorded_log_count), so the hash
// (FNV-1a 64) is part of the on-disk format: it never changes.
#pragma once

#include <string_view>

#include "base/fnv.h"

namespace weir::replica {

// The owner shard index of a stream path.
inline unsigned owner_index(std::string_view path, unsigned shards) {
  return static_cast<unsigned>(fnv1a64(path) % shards);
}

}  // namespace weir::replica
