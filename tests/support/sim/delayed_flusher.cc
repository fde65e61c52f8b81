#include "support/sim/delayed_flusher.h"

namespace weir::raft {

void delayed_flusher::flush(storage::writable_file& f, std::vector<std::byte> bytes,
                            std::function<void(status)> done) {
  status st = f.append(bytes);
  ex_.add_timer(latency_(), [&f, st = std::move(st), done = std::move(done)]() mutable {
    if (!st) return done(std::move(st));
    done(f.sync());
  });
}

void delayed_flusher::run(std::function<status()> work, std::function<void(status)> done) {
  ex_.add_timer(latency_(), [work = std::move(work), done = std::move(done)]() mutable { done(work()); });
}

}  // namespace weir::raft
