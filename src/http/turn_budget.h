// turn_budget: how many bytes the connections of one event loop may read in one turn of the loop, all
// together (server_options::read_bytes_per_turn; docs/http-engine.md, "Reading is bounded per turn").
// Handling a request costs about its size (copies, parsing, the handler's encoding), and the loop's
// timers and posted tasks (a cluster node's raft ticks, its heartbeats) run only after the turn's I/O
// events: without a bound, one epoll batch of 70 connections with 512 KiB bodies held a loop for
// 0.27-0.75 s. A read that starts within the budget is not cut short, so a turn reads at most the
// budget plus one read. Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weir::http {

class turn_budget {
 public:
  // per_turn 0: no bound.
  explicit turn_budget(std::size_t per_turn) : per_turn_(per_turn) {}

  // Whether a read may start during loop turn `turn` (io::event_loop::turn()); a new turn refills it.
  bool allows(std::uint64_t turn) {
    if (per_turn_ == 0) return true;
    if (turn != turn_) {
      turn_ = turn;
      used_ = 0;
    }
    return used_ < per_turn_;
  }
  // `n` bytes were read during the turn allows() last saw.
  void charge(std::size_t n) { used_ += n; }
  std::size_t used() const { return used_; }

 private:
  std::size_t per_turn_;
  std::uint64_t turn_ = 0;
  std::size_t used_ = 0;
};

}  // namespace weir::http
