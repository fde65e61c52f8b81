// checkpoint_store: writes and finds metadata snapshots (opaque blobs from the state machine) tagged with
// the lsn they cover. A write is atomic: temp file + fdatasync + rename + fsync(dir); a crash leaves
// either the old or the new checkpoint, never a half one. Blocking: call it on the log's sync thread
// (log_writer::checkpoint) or at start-up, never on an event loop.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "storage/env.h"

namespace weir::storage {

struct checkpoint {
  lsn covered;  // the snapshot includes every record with lsn <= covered
  std::vector<std::byte> blob;
};

class checkpoint_store {
 public:
  checkpoint_store(env& e, std::string dir) : env_(e), dir_(std::move(dir)) {}

  // Writes a checkpoint, then removes older ones (and leftover temp files).
  status write(lsn covered, std::span<const std::byte> blob);
  // The newest checkpoint whose CRC checks out; invalid ones are logged and skipped, never used.
  result<std::optional<checkpoint>> load_latest();

 private:
  env& env_;
  std::string dir_;
};

}  // namespace weir::storage
