#include "tier/cold_reader.h"

#include <algorithm>
#include <utility>

#include "tier/hot_tier.h"

namespace weir::tier {

cold_reader::cold_reader(unsigned threads) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i) threads_.emplace_back([this] { run(); });
}

cold_reader::~cold_reader() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void cold_reader::submit(std::vector<storage::segment_reader*> readers, streams::read_plan plan,
                         io::event_loop& home, completion done) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(job{std::move(readers), std::move(plan), &home, std::move(done)});
  }
  cv_.notify_one();
}

void cold_reader::run() {
  for (;;) {
    job j;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      j = std::move(queue_.front());
      queue_.pop_front();
    }
    status st = hot_tier::resolve_slices(j.readers, j.plan);
    // The completion and the plan's buffers go back to the loop: what they hold (an exchange, a live
    // reader) belongs to that core and is released there.
    j.home->post([done = std::move(j.done), plan = std::move(j.plan), st = std::move(st)]() mutable {
      done(std::move(plan), std::move(st));
    });
  }
}

}  // namespace weir::tier
