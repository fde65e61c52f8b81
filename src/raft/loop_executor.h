// loop_executor: the raft module's executor on one of weir's event loops (io::event_loop has the same
// members). Lives on, and is used from, the loop's own thread.
#pragma once

#include "io/event_loop.h"
#include "raft/executor.h"

namespace weir::raft {

class loop_executor final : public executor {
 public:
  explicit loop_executor(io::event_loop& loop) : loop_(loop) {}
  std::int64_t now_ms() const override { return loop_.now_ms(); }
  void post(task fn) override { loop_.post(std::move(fn)); }
  timer_id add_timer(std::chrono::milliseconds delay, task fn) override {
    return loop_.add_timer(delay, std::move(fn));
  }
  bool cancel_timer(timer_id id) override { return loop_.cancel_timer(id); }

 private:
  io::event_loop& loop_;
};

}  // namespace weir::raft
