// listener: the accepting socket of one core (SO_REUSEPORT; the kernel spreads connections between the
// cores' listeners). Accepts until EAGAIN (edge-triggered) and enforces the node-wide connection caps
// (admission). Loop thread only.
//
// Running out of descriptors (EMFILE/ENFILE) must not stop accepting for good: with edge-triggered epoll
// no new edge comes while the accept queue stays full. The listener keeps one spare descriptor: on EMFILE
// it frees it, accepts the waiting connection, answers 503 and closes it, then takes the spare back, so
// the queue drains and later connections bring new edges. If the spare cannot be taken back, a timer
// retries the accept. The condition is logged once per interval, not once per attempt.
#pragma once

#include <cstdint>
#include <string_view>

#include "io/event_loop.h"

namespace weir::http {

struct loop_context;

class listener final : public io::io_handler {
 public:
  listener(loop_context& ctx, int fd);
  ~listener();
  bool start();  // registers with the loop
  void close();
  void on_io(std::uint32_t events) override;
  int fd() const { return fd_; }

 private:
  // EMFILE/ENFILE (`err`): shed one waiting connection with the spare descriptor. False: could not
  // (retry later).
  bool shed_one(int err);
  void retry_later();
  void note_exhausted(int err);
  // Answers a connection we will not serve, then closes it.
  void refuse(int fd, std::string_view response);

  loop_context* ctx_;
  int fd_;
  int spare_fd_ = -1;
  bool registered_ = false;
  bool retry_pending_ = false;
  io::event_loop::timer_id retry_timer_ = 0;
  std::int64_t last_exhausted_log_ms_ = -1;
  std::uint64_t exhausted_since_log_ = 0;
};

}  // namespace weir::http
