// Socket helpers for the engine and its tests: listeners (SO_REUSEPORT, one per core), accept,
// host:port parsing. Plain functions over file descriptors; errors are values.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace weir::io {

enum class socket_errc { bad_address = 1, system = 2, in_use = 3 };

struct host_port {
  std::string host;
  std::uint16_t port = 0;
};

// "HOST:PORT" (IPv4 dotted quad or "localhost"). Port 0 is allowed (ephemeral).
result<host_port> parse_host_port(std::string_view s);

// A non-blocking, close-on-exec IPv4 TCP listener with SO_REUSEADDR and SO_REUSEPORT, so that every
// core can bind its own listener to the same port and the kernel spreads connections between them.
result<int> listen_tcp(const std::string& host, std::uint16_t port, int backlog = 4096);

// Makes sure that no other process listens on host:port, and keeps other weir processes from starting
// to. The listeners use SO_REUSEPORT so that the threads of one process share the port, but the kernel
// lets any process of the same user join that group and take part of the connections; so before
// binding: (1) a claim on the abstract Unix socket name "weir-listen:HOST:PORT" (per network
// namespace, like ports; released by the kernel when the process dies) serialises weir processes, and
// (2) a probe socket bound *without* SO_REUSEPORT fails with EADDRINUSE if anything listens there.
// Returns the claim's descriptor: keep it open for as long as the listeners live. Port 0 (ephemeral)
// needs no claim: returns -1.
result<int> claim_listen_address(const std::string& host, std::uint16_t port);

// The local port a socket is bound to.
result<std::uint16_t> local_port(int fd);

// A blocking or non-blocking connected IPv4 socket to host:port (the connect may still be in progress
// when non_blocking: wait for writability, then check socket_error()).
result<int> connect_tcp(const std::string& host, std::uint16_t port, bool non_blocking);

// SO_ERROR of a socket (0 when the connect succeeded).
int socket_error(int fd);

void set_nodelay(int fd);

// send(2) and recv(2) without libc's cancellation-point bookkeeping (weir never cancels a thread):
// on the pipelined request path those wrappers cost about 1.5% of the server's CPU. Same results and
// errno as send/recv.
inline ssize_t send_bytes(int fd, const void* buf, std::size_t len, int flags) {
  return ::syscall(SYS_sendto, fd, buf, len, flags, nullptr, 0);
}
inline ssize_t recv_bytes(int fd, void* buf, std::size_t len, int flags) {
  return ::syscall(SYS_recvfrom, fd, buf, len, flags, nullptr, nullptr);
}

}  // namespace weir::io
