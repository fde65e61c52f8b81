// object_store_workers: runs object_store calls on a small pool of worker threads, so that an event loop
// (or a local-disk read thread) never waits on S3. Each call's completion runs on the worker thread, or is
// posted to the io::event_loop the caller names.
//
// Owns its threads; the store must outlive it. Destruction stops the threads after their current call
// and drops queued calls without running their completions (the loops have stopped by then), as
// cold_reader does. Thread-safe: submit from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "io/event_loop.h"
#include "tier/object_store.h"

namespace weir::tier {

class object_store_workers {
 public:
  template <class T>
  using done_fn = std::function<void(store_result<T>)>;

  object_store_workers(object_store& store, unsigned threads);
  ~object_store_workers();
  object_store_workers(const object_store_workers&) = delete;
  object_store_workers& operator=(const object_store_workers&) = delete;

  // `loop`: the loop that runs `done` (posted); null: `done` runs on the worker thread.
  void put(std::string key, shared_object_bytes bytes, put_options options, done_fn<object_info> done,
           io::event_loop* loop = nullptr);
  void get_range(std::string key, std::uint64_t offset, std::uint64_t length, done_fn<range_read> done,
                 io::event_loop* loop = nullptr);
  void head(std::string key, done_fn<object_info> done, io::event_loop* loop = nullptr);
  void list(std::string prefix, std::string continuation, int max_keys, done_fn<list_page> done,
            io::event_loop* loop = nullptr);
  void remove(std::string key, done_fn<store_done> done, io::event_loop* loop = nullptr);

  // Calls queued and not yet started.
  std::size_t queued() const;

 private:
  template <class T>
  static void complete(store_result<T> r, done_fn<T>& done, io::event_loop* loop);
  void submit(std::function<void()> job);
  void run();

 public:
  // Runs `job` on a worker thread (a cold_fetcher read, which makes its own store calls there). Dropped
  // without running once the workers stop.
  void run_job(std::function<void()> job) { submit(std::move(job)); }
  // Runs `job` on a worker thread, then `done` with its result on `loop`.
  template <class R>
  void run_job(std::function<R()> job, std::function<void(R)> done, io::event_loop* loop) {
    submit([job = std::move(job), done = std::move(done), loop]() mutable {
      loop->post([done = std::move(done), r = job()]() mutable { done(std::move(r)); });
    });
  }

 private:
  object_store& store_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace weir::tier
