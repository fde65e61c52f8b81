#include "tier/object_store_workers.h"

#include <algorithm>
#include <utility>

namespace weir::tier {

object_store_workers::object_store_workers(object_store& store, unsigned threads) : store_(store) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i) threads_.emplace_back([this] { run(); });
}

object_store_workers::~object_store_workers() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

std::size_t object_store_workers::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void object_store_workers::submit(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void object_store_workers::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

template <class T>
void object_store_workers::complete(store_result<T> r, done_fn<T>& done, io::event_loop* loop) {
  if (!loop) {
    done(std::move(r));
    return;
  }
  loop->post([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
}

void object_store_workers::put(std::string key, shared_object_bytes bytes, put_options options,
                               done_fn<object_info> done, io::event_loop* loop) {
  submit([this, key = std::move(key), bytes = std::move(bytes), options, done = std::move(done),
          loop]() mutable {
    store_result<object_info> r = store_.put(key, *bytes, options);
    bytes.reset();  // before the report: the owner may reuse the buffer once it is the only one holding it
    complete(std::move(r), done, loop);
  });
}

void object_store_workers::get_range(std::string key, std::uint64_t offset, std::uint64_t length,
                                     done_fn<range_read> done, io::event_loop* loop) {
  submit([this, key = std::move(key), offset, length, done = std::move(done), loop]() mutable {
    complete(store_.get_range(key, offset, length), done, loop);
  });
}

void object_store_workers::head(std::string key, done_fn<object_info> done, io::event_loop* loop) {
  submit([this, key = std::move(key), done = std::move(done), loop]() mutable {
    complete(store_.head(key), done, loop);
  });
}

void object_store_workers::list(std::string prefix, std::string continuation, int max_keys,
                                done_fn<list_page> done, io::event_loop* loop) {
  submit([this, prefix = std::move(prefix), continuation = std::move(continuation), max_keys,
          done = std::move(done),
          loop]() mutable { complete(store_.list(prefix, continuation, max_keys), done, loop); });
}

void object_store_workers::remove(std::string key, done_fn<store_done> done, io::event_loop* loop) {
  submit([this, key = std::move(key), done = std::move(done), loop]() mutable {
    complete(store_.remove(key), done, loop);
  });
}

}  // namespace weir::tier
