// delayed_flusher: a raft::log_flusher for tests and the simulations. Appends at once (the bytes reach
// the "page cache": a crash may still drop them) and syncs after latency() milliseconds on the executor;
// run() runs its work after latency() too (the simulations draw it per job: a disk's varying latency).
// Lives on the executor's thread.
#pragma once

#include <chrono>
#include <functional>

#include "raft/executor.h"
#include "raft/node_log.h"

namespace weir::raft {

class delayed_flusher final : public log_flusher {
 public:
  delayed_flusher(executor& ex, std::function<std::chrono::milliseconds()> latency)
      : ex_(ex), latency_(std::move(latency)) {}
  void flush(storage::writable_file& f, std::vector<std::byte> bytes,
             std::function<void(status)> done) override;
  void run(std::function<status()> work, std::function<void(status)> done) override;

 private:
  executor& ex_;
  std::function<std::chrono::milliseconds()> latency_;
};

}  // namespace weir::raft
