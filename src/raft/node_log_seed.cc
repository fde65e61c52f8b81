#include "raft/node_log_seed.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

#include "raft/node_log.h"
#include "raft/thread_flusher.h"

namespace weir::raft {

status seed_node_log(storage::env& env, const std::string& path, const std::vector<seeded_group>& groups) {
  // The flusher's completions come back to this thread, which runs them while it waits.
  struct queue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> tasks;
  } q;
  thread_flusher flusher([&q](std::function<void()> fn) {
    std::lock_guard lock(q.mu);
    q.tasks.push_back(std::move(fn));
    q.cv.notify_one();
  });
  auto log = node_log::open(env, flusher, path);
  if (!log) return log.err();
  status outcome;
  std::uint64_t last = 0;
  for (const seeded_group& g : groups) {
    (*log)->add(record::log_record{g.group, record::term{g.term}});
    last = (*log)->add(record::log_record{
        g.group, record::snapshot{g.index, g.term, g.index, g.conf, /*trailing=*/0, g.data}});
  }
  (*log)->set_on_synced([&outcome](std::uint64_t, status st) {
    if (!st && outcome) outcome = st;
  });
  while ((*log)->synced_batch() < last && outcome) {
    if (!(*log)->flushing()) (*log)->flush();
    std::function<void()> task;
    {
      std::unique_lock lock(q.mu);
      q.cv.wait(lock, [&q] { return !q.tasks.empty(); });
      task = std::move(q.tasks.front());
      q.tasks.pop_front();
    }
    task();
  }
  // Whatever the log still has the flusher do (a directory sync) completes before both go.
  for (;;) {
    std::function<void()> task;
    {
      std::lock_guard lock(q.mu);
      if (q.tasks.empty()) break;
      task = std::move(q.tasks.front());
      q.tasks.pop_front();
    }
    task();
  }
  return outcome;
}

}  // namespace weir::raft
