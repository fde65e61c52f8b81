// sim_disk_worker: a storage::disk_worker for the simulations. Each task runs on the simulation's
// executor after a disk latency the simulation chooses, one at a time and in the order handed over (a
// slow task holds back the ones behind it, as one disk thread would). A halted executor (a dead process)
// runs none of them. Lives on the executor's thread; destroy it after the logs that use it.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>

#include "raft/executor.h"
#include "storage/log_writer.h"

namespace weir::replica::testing {

class sim_disk_worker final : public storage::disk_worker {
 public:
  sim_disk_worker(raft::executor& ex, std::function<std::chrono::milliseconds()> latency)
      : ex_(ex), latency_(std::move(latency)) {}
  ~sim_disk_worker() override { *alive_ = false; }
  sim_disk_worker(const sim_disk_worker&) = delete;
  sim_disk_worker& operator=(const sim_disk_worker&) = delete;

  void run(std::function<void()> work) override {
    queue_.push_back(std::move(work));
    if (!busy_) next();
  }
  std::size_t queued() const { return queue_.size(); }

 private:
  void next() {
    if (queue_.empty()) {
      busy_ = false;
      return;
    }
    busy_ = true;
    ex_.add_timer(latency_(), [this, alive = std::weak_ptr<bool>(alive_)] {
      if (auto a = alive.lock(); !a || !*a) return;
      std::function<void()> work = std::move(queue_.front());
      queue_.pop_front();
      work();  // may hand over more (queued behind, busy_ is still set)
      next();
    });
  }

  raft::executor& ex_;
  std::function<std::chrono::milliseconds()> latency_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;  // a task's timer is armed
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace weir::replica::testing
