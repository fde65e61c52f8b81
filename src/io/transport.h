// transport: how a server connection reads and writes its bytes, under the HTTP engine. Three kinds:
// `tcp_transport` (plain TCP, the default: one recvfrom/sendto each, kept inline in the connection so the
// plaintext path neither allocates nor pays more than a predicted virtual call), `tls_transport`
// (io/tls.h: OpenSSL over the same non-blocking socket) and `chopping_transport` (io/fake_transport.h:
// the test fake that hands bytes over in small pieces). All are used on the connection's core only.
//
// The descriptor stays the connection's: it registers it with the event loop (edge-triggered) and
// closes it. A transport only moves bytes and says which readiness a blocked call waits for.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstddef>

#include "io/socket.h"

namespace weir::io {

class transport {
 public:
  // read()/write() results besides a byte count (read: 0 is the end of the stream).
  static constexpr std::ptrdiff_t would_block = -1;
  static constexpr std::ptrdiff_t failed = -2;  // the connection is unusable: close it

  virtual ~transport() = default;
  virtual std::ptrdiff_t read(char* buf, std::size_t len) = 0;
  virtual std::ptrdiff_t write(const char* buf, std::size_t len) = 0;
  // After read() returned would_block: it waits for the socket to become writable (TLS: a handshake
  // message could not be sent), not readable.
  virtual bool read_needs_writable() const { return false; }
  // After write() returned would_block: it waits for the socket to become readable (TLS: a handshake
  // in progress), not writable.
  virtual bool write_needs_readable() const { return false; }
  // True if a read() that returned fewer bytes than asked proves the socket drained (so that under
  // edge-triggered readiness a new edge will announce more). TLS returns one record per read: it must
  // be read until would_block.
  virtual bool short_read_drains() const { return true; }
  // False while a handshake is in progress (the connection applies the header timeout to it).
  virtual bool established() const { return true; }
  // The end of our output: TLS close_notify (best effort), then shutdown(SHUT_WR).
  virtual void shutdown_write() = 0;
  // The connection closes its descriptor right after: release per-connection state.
  virtual void close() {}
};

// Plain TCP. final: the connection calls it through its concrete type where it can.
class tcp_transport final : public transport {
 public:
  void reset(int fd) { fd_ = fd; }
  std::ptrdiff_t read(char* buf, std::size_t len) override {
    for (;;) {
      auto n = recv_bytes(fd_, buf, len, 0);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? would_block : failed;
    }
  }
  std::ptrdiff_t write(const char* buf, std::size_t len) override {
    for (;;) {
      auto n = send_bytes(fd_, buf, len, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? would_block : failed;
    }
  }
  void shutdown_write() override { ::shutdown(fd_, SHUT_WR); }

 private:
  int fd_ = -1;
};

}  // namespace weir::io
