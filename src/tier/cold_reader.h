// cold_reader: the threads that read cold slices of read plans (records the hot tier evicted) back from
// the segment files, so that a slow disk read never runs on an event loop (docs/storage.md, "Reads of
// old data"). A job carries its plan to a reader thread, which preads the plan's cold slices (hot_tier::
// resolve_slices) and posts the completed plan, with the status of the read, back to the loop that asked.
//
// One pool per node, two threads. Cold reads are disk-bound: two in flight keep a disk (or the page
// cache copy) busy while one waits, and a thread per core would add threads that mostly sleep on a node
// that already runs one loop per core. Per node rather than per shard because a cluster node keeps every
// stream on core 0: a per-shard pool would give that core alone no more than the others. Each shard
// bounds its own jobs in flight here (stream_shard's cold read gate), so a flood of catch-ups on one core
// waits on that core and cannot fill the pool's queue for the others.
//
// Thread-safe: submit() from any loop. The segment readers a job names must outlive the pool (node owns
// both and destroys the pool first); jobs not yet run when the pool is destroyed are dropped without
// their completion being called (the loops have stopped by then).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/result.h"
#include "io/event_loop.h"
#include "storage/segment_reader.h"
#include "streams/types.h"

namespace weir::tier {

class cold_reader {
 public:
  // Runs on the loop the job named, with the plan (cut before a failing slice) and the read's status.
  using completion = std::function<void(streams::read_plan plan, status st)>;

  explicit cold_reader(unsigned threads = 2);
  ~cold_reader();  // stops the threads; queued jobs are dropped
  cold_reader(const cold_reader&) = delete;
  cold_reader& operator=(const cold_reader&) = delete;

  // Reads the cold slices of `plan` through `readers` (hot_tier::readers()) on a reader thread, then
  // posts `done` to `home`.
  void submit(std::vector<storage::segment_reader*> readers, streams::read_plan plan, io::event_loop& home,
              completion done);

 private:
  struct job {
    std::vector<storage::segment_reader*> readers;
    streams::read_plan plan;
    io::event_loop* home;
    completion done;
  };
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<job> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace weir::tier
