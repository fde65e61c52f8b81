// tcp_stream: a non-blocking client TCP connection driven by an event_loop (the building block of HTTP
// clients such as `weir bench`). Lives on one loop; every call on that loop's thread.
//
//   auto s = io::tcp_stream::connect(loop, port, {
//       .on_connected = [](int err) { /* 0: connected; else errno and the stream is closed */ },
//       .on_readable = [] { /* read() until would_block */ },
//       .on_writable = [] { /* the send buffer has room again: write() what is pending */ },
//       .on_hangup = [] { /* peer closed or error: read() what is left, then close() */ }});
//
// Readiness is edge-triggered: after on_readable, call read() until it returns would_block (or 0 for
// end of stream), or until a read returns fewer bytes than asked (the socket was drained then: data
// arriving later raises a new edge), or you will not be told again. write()/writev() may write fewer bytes
// than asked; keep the rest and wait for on_writable. Callbacks may close() or destroy the stream.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "io/event_loop.h"

namespace weir::io {

class tcp_stream final : private io_handler {
 public:
  struct callbacks {
    std::function<void(int err)> on_connected;
    std::function<void()> on_readable;
    std::function<void()> on_writable;
    std::function<void()> on_hangup;
  };
  // Results of read()/write(): >= 0 bytes (read: 0 means the peer closed), or one of these.
  static constexpr std::ptrdiff_t would_block = -1;
  static constexpr std::ptrdiff_t failed = -2;  // errno says why

  // Starts a non-blocking connect to host:port (IPv4). on_connected fires on the loop once it completes.
  static result<std::unique_ptr<tcp_stream>> connect(event_loop& loop, std::uint16_t port, callbacks cb,
                                                     const std::string& host = "127.0.0.1");
  ~tcp_stream();
  tcp_stream(const tcp_stream&) = delete;
  tcp_stream& operator=(const tcp_stream&) = delete;

  std::ptrdiff_t read(char* buf, std::size_t len);
  std::ptrdiff_t write(std::string_view data);
  std::ptrdiff_t writev(const iovec* iov, int count);
  void close();  // idempotent; no callbacks after it

  bool connected() const { return connected_; }
  bool open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  event_loop& loop() const { return *loop_; }

 private:
  tcp_stream(event_loop& loop, int fd, callbacks cb);
  void on_io(std::uint32_t events) override;

  event_loop* loop_;
  int fd_;
  callbacks cb_;
  bool connected_ = false;
  std::shared_ptr<bool> alive_;  // lets on_io notice that a callback destroyed the stream
};

}  // namespace weir::io
