// thread_flusher: the production log_flusher. The node log's batches are written and fdatasync'ed on a
// thread of their own, and its other disk work (directory syncs, segment reads and deletions) runs there
// too, so the event loop never blocks on the disk; each completion is handed back to the loop through
// `post_back`, which must be thread-safe (io::event_loop::post is).
//
// One flush at a time is all node_log asks for; the queue still takes several (they run in order).
// Destroying the flusher finishes the flushes already queued and posts their completions: destroy it
// before the node_log whose file it writes (node_log ignores completions that arrive after its end).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "raft/node_log.h"

namespace weir::raft {

class thread_flusher final : public log_flusher {
 public:
  using poster = std::function<void(std::function<void()>)>;

  explicit thread_flusher(poster post_back);
  ~thread_flusher() override;
  thread_flusher(const thread_flusher&) = delete;
  thread_flusher& operator=(const thread_flusher&) = delete;

  // Called on the loop; `f` must stay open until `done` has run.
  void flush(storage::writable_file& f, std::vector<std::byte> bytes,
             std::function<void(status)> done) override;
  // Called on the loop; `work` runs on the flusher's thread.
  void run(std::function<status()> work, std::function<void(status)> done) override;

 private:
  struct job {
    std::function<status()> work;
    std::function<void(status)> done;
  };
  void run();

  poster post_back_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<job> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace weir::raft
