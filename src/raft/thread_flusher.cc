#include "raft/thread_flusher.h"

namespace weir::raft {

thread_flusher::thread_flusher(poster post_back)
    : post_back_(std::move(post_back)), thread_([this] { run(); }) {}

thread_flusher::~thread_flusher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void thread_flusher::flush(storage::writable_file& f, std::vector<std::byte> bytes,
                           std::function<void(status)> done) {
  run(
      [file = &f, bytes = std::move(bytes)] {
        status st = file->append(bytes);
        if (st) st = file->sync();
        return st;
      },
      std::move(done));
}

void thread_flusher::run(std::function<status()> work, std::function<void(status)> done) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(job{std::move(work), std::move(done)});
  }
  cv_.notify_one();
}

void thread_flusher::run() {
  for (;;) {
    job j;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left to write
      j = std::move(jobs_.front());
      jobs_.pop_front();
    }
    status st = j.work();
    post_back_([done = std::move(j.done), st = std::move(st)]() mutable { done(std::move(st)); });
  }
}

}  // namespace weir::raft
