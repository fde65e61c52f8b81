// listener: the accepting socket of one core (SO_REUSEPORT; the kernel spreads connections between the
// cores' listeners). Accepts until EAGAIN (edge-triggered), enforces the per-core connection limit.
#pragma once

#include <cstdint>

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
  loop_context* ctx_;
  int fd_;
  bool registered_ = false;
};

}  // namespace weir::http
