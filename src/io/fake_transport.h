// chopping_transport: the test fake of io::transport. It wraps a real transport (plain TCP over
// loopback) and hands at most `piece` bytes over per read and per write, so that the engine meets the
// short reads, partial writes and many-reads-per-batch that a slow network or TLS records produce,
// deterministically. Counts the calls so a test can see the pieces. Loop thread only.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>

#include "io/transport.h"

namespace weir::io {

class chopping_transport final : public transport {
 public:
  struct counters {
    std::atomic<std::size_t> reads{0}, writes{0};
  };
  chopping_transport(int fd, std::size_t piece, std::shared_ptr<counters> c)
      : piece_(std::max<std::size_t>(1, piece)), counts_(std::move(c)) {
    inner_.reset(fd);
  }
  std::ptrdiff_t read(char* buf, std::size_t len) override {
    if (counts_) counts_->reads.fetch_add(1, std::memory_order_relaxed);
    return inner_.read(buf, std::min(len, piece_));
  }
  std::ptrdiff_t write(const char* buf, std::size_t len) override {
    if (counts_) counts_->writes.fetch_add(1, std::memory_order_relaxed);
    return inner_.write(buf, std::min(len, piece_));
  }
  // A piece-sized read says nothing about what is left in the socket: read on until would_block.
  bool short_read_drains() const override { return false; }
  void shutdown_write() override { inner_.shutdown_write(); }

 private:
  tcp_transport inner_;
  std::size_t piece_;
  std::shared_ptr<counters> counts_;
};

}  // namespace weir::io
